package modelserver

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func postLimited(t *testing.T, url, body string, h ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	for i := 0; i+1 < len(h); i += 2 {
		req.Header.Set(h[i], h[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp, b.String()
}

// Over the limit, each API refuses in its own shape with Retry-After; the
// admitted answers carry the API's rate-limit headers.
func TestLimitRefusesInEachAPIsShape(t *testing.T) {
	s := Start(t)
	s.SetLimit(Limit{Requests: 1, Window: time.Minute})
	resp, _ := postLimited(t, s.URL()+"/v1/chat/completions", `{"model":"m"}`)
	if resp.StatusCode != 200 || resp.Header.Get("x-ratelimit-remaining-requests") != "0" || resp.Header.Get("x-ratelimit-limit-requests") != "1" {
		t.Fatalf("first request: %d %v", resp.StatusCode, resp.Header)
	}
	for _, c := range []struct{ path, want string }{
		{"/v1/chat/completions", `"code":"rate_limit_exceeded"`},
		{"/v1/responses", `"code":"rate_limit_exceeded"`},
		{"/v1/messages", `"type":"rate_limit_error"`},
	} {
		resp, body := postLimited(t, s.URL()+c.path, `{"model":"m"}`)
		if resp.StatusCode != 429 || !strings.Contains(body, c.want) || resp.Header.Get("Retry-After") != "60" || resp.Header.Get("retry-after-ms") == "" {
			t.Errorf("%s over the limit: %d %s %v", c.path, resp.StatusCode, body, resp.Header)
		}
	}
	if log := s.LimitLog(); len(log) != 4 || log[0].Refused || !log[3].Refused {
		t.Errorf("limit log %+v", log)
	}
	q := Start(t)
	q.SetLimit(Limit{Quota: true})
	if resp, body := postLimited(t, q.URL()+"/v1/chat/completions", `{}`); resp.StatusCode != 429 || !strings.Contains(body, "insufficient_quota") {
		t.Errorf("quota, chat: %d %s", resp.StatusCode, body)
	}
	if resp, body := postLimited(t, q.URL()+"/v1/messages", `{}`); resp.StatusCode != 400 || !strings.Contains(body, "credit balance is too low") {
		t.Errorf("quota, messages: %d %s", resp.StatusCode, body)
	}
}
