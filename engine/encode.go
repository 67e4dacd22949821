package engine

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/flowrun/flow/schema"
)

// appendEvent encodes an event as one JSON line. Events are written for
// every visit start, end and progress update, so they are encoded by hand:
// encoding/json's reflection was a fifth of the engine's time per visit.
// The output is the same object encoding/json would produce.
func appendEvent(b []byte, e *Event) []byte {
	b = append(b, `{"time":`...)
	b = appendTime(b, e.Time)
	b = appendField(b, `,"type":`, e.Type)
	b = appendOptField(b, `,"run":`, e.Run)
	b = appendOptField(b, `,"visit":`, e.Visit)
	b = appendOptField(b, `,"node":`, e.Node)
	b = appendKind(b, e.Kind)
	b = appendOptField(b, `,"driver":`, e.Driver)
	b = appendOptField(b, `,"model":`, e.Model)
	b = appendOptField(b, `,"activity":`, e.Activity)
	if e.Tokens != 0 {
		b = append(b, `,"tokens":`...)
		b = appendInt(b, e.Tokens)
	}
	if e.OK != nil {
		b = append(b, `,"ok":`...)
		b = strconv.AppendBool(b, *e.OK)
	}
	if e.Error != nil {
		b = appendJSON(b, `,"error":`, e.Error)
	}
	if e.Usage != nil {
		b = appendUsage(b, e.Usage)
	}
	if e.WallMS != 0 {
		b = append(b, `,"wall_ms":`...)
		b = appendInt(b, e.WallMS)
	}
	b = appendOptField(b, `,"status":`, e.Status)
	b = appendOptField(b, `,"dir":`, e.Dir)
	return append(b, "}\n"...)
}

// appendTime appends t as encoding/json would (RFC 3339 with nanoseconds,
// trailing zeros cut). Every fact and event has a time, and formatting one
// was a third of encoding a fact, so the part that changes once a second
// is formatted once a second. Each part is copied whole, at a size the
// compiler knows, and what is past its end cut back: a copy of a size
// known only when running is a call to memmove, and a time made three.
func appendTime(b []byte, t time.Time) []byte {
	sec, loc := t.Unix(), t.Location()
	c := lastSecond.Load()
	if c == nil || c.sec != sec || c.loc != loc {
		whole := t.AppendFormat(nil, time.RFC3339)
		zone := whole[min(19, len(whole)):]
		if len(whole) < 20 || whole[19] != 'Z' && whole[19] != '+' && whole[19] != '-' || len(zone) >= len(secondText{}.zone) {
			// A year past 9999 or before 0: no fast path (and no JSON).
			// (Nor for a zone longer than RFC 3339's, which none is.)
			b = append(b, '"')
			b = t.AppendFormat(b, time.RFC3339Nano)
			return append(b, '"')
		}
		c = &secondText{sec: sec, loc: loc, zoneLen: len(zone) + 1}
		c.date[0] = '"'
		copy(c.date[1:], whole[:19])
		copy(c.zone[:], zone)
		c.zone[len(zone)] = '"'
		lastSecond.Store(c)
	}
	n := len(b)
	if cap(b)-n < maxTimeLen {
		b = slices.Grow(b, maxTimeLen)
	}
	b = b[:n+maxTimeLen]
	*(*[len(c.date)]byte)(b[n:]) = c.date
	n += len(c.date)
	if ns := t.Nanosecond(); ns != 0 {
		pair := func(p int) (byte, byte) { return digitPairs[2*p], digitPairs[2*p+1] }
		frac := (*[10]byte)(b[n:])
		frac[0], frac[1] = '.', byte('0'+ns/1e8)
		frac[2], frac[3] = pair(ns / 1e6 % 100)
		frac[4], frac[5] = pair(ns / 1e4 % 100)
		frac[6], frac[7] = pair(ns / 100 % 100)
		frac[8], frac[9] = pair(ns % 100)
		n += len(frac)
		for b[n-1] == '0' {
			n--
		}
	}
	*(*[len(c.zone)]byte)(b[n:]) = c.zone
	return b[:n+c.zoneLen]
}

// maxTimeLen is the most appendTime's fast path appends: a quote, the
// date, the fraction, the zone and a quote.
const maxTimeLen = len(secondText{}.date) + 10 + len(secondText{}.zone)

// secondText is one second formatted: `"2006-01-02T15:04:05` and the zone
// with the closing quote, `Z"` or `-07:00"`, the first zoneLen bytes of
// zone.
type secondText struct {
	sec     int64
	loc     *time.Location
	date    [20]byte
	zone    [8]byte
	zoneLen int
}

var lastSecond atomic.Pointer[secondText]

// durationText is d.String(), kept for the duration seen last: every end
// fact of an agent visit names its turn timeout, nearly always the same.
func durationText(d time.Duration) string {
	if c := lastDuration.Load(); c != nil && c.d == d {
		return c.text
	}
	c := &durationString{d: d, text: d.String()}
	lastDuration.Store(c)
	return c.text
}

type durationString struct {
	d    time.Duration
	text string
}

var lastDuration atomic.Pointer[durationString]

// appendField appends a string field; key is its whole `,"name":`.
func appendField(b []byte, key, value string) []byte {
	return appendString(append(b, key...), value)
}

// appendOptField appends a string field unless it is empty (omitempty).
func appendOptField(b []byte, key, value string) []byte {
	if value == "" {
		return b
	}
	return appendField(b, key, value)
}

// appendKind appends a node kind's field, unless it is empty. A kind is
// one of a few words, appended whole, as the compiler spells it out.
func appendKind(b []byte, kind string) []byte {
	const key = `,"kind":"`
	switch schema.Kind(kind) {
	case "":
		return b
	case schema.KindAgent:
		return append(b, key+schema.KindAgent+`"`...)
	case schema.KindRun:
		return append(b, key+schema.KindRun+`"`...)
	case schema.KindMap:
		return append(b, key+schema.KindMap+`"`...)
	case schema.KindLoop:
		return append(b, key+schema.KindLoop+`"`...)
	case schema.KindParallel:
		return append(b, key+schema.KindParallel+`"`...)
	case schema.KindChoice:
		return append(b, key+schema.KindChoice+`"`...)
	case schema.KindFlow:
		return append(b, key+schema.KindFlow+`"`...)
	case schema.KindAsk:
		return append(b, key+schema.KindAsk+`"`...)
	}
	return appendField(b, `,"kind":`, kind)
}

// appendJSON appends a field encoded by encoding/json; key is its whole
// `,"name":`, as for appendField.
func appendJSON(b []byte, key string, v any) []byte {
	enc, err := json.Marshal(v)
	if err != nil {
		return b
	}
	return append(append(b, key...), enc...)
}

const hexDigits = "0123456789abcdef"

// digitPairs holds 00 to 99, for writing two digits at once.
const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"

// appendInt appends v in decimal. Most numbers in facts and events are
// small — attempts, turns, milliseconds — and are appended from a table.
func appendInt(b []byte, v int64) []byte {
	switch {
	case uint64(v) < 10:
		return append(b, byte('0'+v))
	case uint64(v) < 100:
		return append(b, digitPairs[2*v], digitPairs[2*v+1])
	}
	return strconv.AppendInt(b, v, 10)
}

// plainByte says which bytes go into a JSON string as they are: ASCII
// but for control characters, '"', '\\' and the three that encoding/json
// escapes for HTML. Bytes of multi-byte runes are not plain: they are
// checked for invalid UTF-8 and U+2028, U+2029.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendString appends s as a JSON string, escaped as encoding/json does
// (including <, > and &, and invalid UTF-8 as U+FFFD). Nearly every string
// a fact holds — visit paths, node ids, kinds, short outputs — is plain
// throughout: it is checked in one tight loop and copied in one piece,
// with its quotes, into room grown once.
func appendString(b []byte, s string) []byte {
	n := len(b)
	if cap(b)-n < len(s)+2 {
		b = slices.Grow(b, len(s)+2)
	}
	b = b[:n+len(s)+2]
	b[n] = '"'
	out := b[n+1 : n+1+len(s)]
	i := 0
	if len(s) <= shortString {
		// A short string is copied byte by byte as it is checked, which
		// costs less than a call to copy it.
		for i < len(s) && plainByte[s[i]] {
			out[i] = s[i]
			i++
		}
	} else {
		for i < len(s) && plainByte[s[i]] {
			i++
		}
		copy(out, s[:i])
	}
	if i < len(s) {
		return appendEscaped(b[:n+1+i], s, i)
	}
	b[n+1+len(s)] = '"'
	return b
}

// shortString is how long a string may be to be copied byte by byte.
const shortString = 32

// appendEscaped appends the rest of the JSON string s and its closing
// quote; b holds the opening quote and the plain bytes of s before i.
func appendEscaped(b []byte, s string, i int) []byte {
	start := i
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if plainByte[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendFact encodes a journal fact as one JSON line, as encoding/json
// would; only the values (output, input, error, usage) go through
// reflection.
func appendFact(b []byte, f *Fact) ([]byte, error) {
	switch f.Type {
	case "end":
		b = append(b, `{"type":"end","time":`...)
	case "start":
		b = append(b, `{"type":"start","time":`...)
	default:
		b = appendField(append(b, '{'), `"type":`, f.Type)
		b = append(b, `,"time":`...)
	}
	b = appendTime(b, f.Time)
	b = appendOptField(b, `,"visit":`, f.Visit)
	b = appendOptField(b, `,"node":`, f.Node)
	b = appendKind(b, f.Kind)
	if f.OK != nil {
		b = append(b, `,"ok":`...)
		b = strconv.AppendBool(b, *f.OK)
	}
	var err error
	if f.Output != nil {
		if b, err = appendAny(append(b, `,"output":`...), f.Output); err != nil {
			return b, err
		}
	}
	if f.Error != nil {
		b = appendJSON(b, `,"error":`, f.Error)
	}
	if f.Skipped {
		b = append(b, `,"skipped":true`...)
	}
	if f.Usage != nil {
		b = appendUsage(b, f.Usage)
	}
	b = appendOptField(b, `,"model":`, f.Model)
	b = appendOptField(b, `,"timeout":`, f.Timeout)
	if f.Attempts != 0 {
		b = append(b, `,"attempts":`...)
		b = appendInt(b, int64(f.Attempts))
	}
	b = appendOptField(b, `,"session":`, f.Session)
	b = appendOptField(b, `,"scope":`, f.Scope)
	if f.WallMS != 0 {
		b = append(b, `,"wall_ms":`...)
		b = appendInt(b, f.WallMS)
	}
	b = appendOptField(b, `,"flow":`, f.Flow)
	b = appendOptField(b, `,"run":`, f.RunID)
	b = appendOptField(b, `,"status":`, f.Status)
	if f.Input != nil {
		if b, err = appendAny(append(b, `,"input":`...), f.Input); err != nil {
			return b, err
		}
	}
	if f.Resumed {
		b = append(b, `,"resumed":true`...)
	}
	return append(b, "}\n"...), nil
}

// appendAny encodes the values flows pass around — strings, numbers,
// booleans, and lists and objects of them — as encoding/json would (object
// keys sorted), and hands anything else to encoding/json.
func appendAny(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return appendString(b, x), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case int:
		return appendInt(b, int64(x)), nil
	case int64:
		return appendInt(b, x), nil
	case float64:
		return appendFloat(b, x)
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendAny(b, e); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		if isNoError(x) {
			return append(b, noErrorJSON...), nil
		}
		return appendObject(b, x, appendAny)
	}
	enc, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, enc...), nil
}

// appendFloat formats f as encoding/json does.
func appendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, fmt.Errorf("json: unsupported value: %v", f)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

// appendUsage encodes a usage field as encoding/json would: a field that
// was not reported is null.
func appendUsage(b []byte, u *Usage) []byte {
	return appendUsageValue(append(b, `,"usage":`...), u)
}

func appendUsageValue(b []byte, u *Usage) []byte {
	num := func(b []byte, name string, v *int64) []byte {
		b = append(b, name...)
		if v == nil {
			return append(b, "null"...)
		}
		return appendInt(b, *v)
	}
	if u.Input == nil && u.Output == nil && u.CacheRead == nil && u.CacheWrite == nil && u.Cost == nil {
		// No tokens reported: commands, and drivers that do not count.
		b = append(b, `{"input":null,"output":null,"cache_read":null,"cache_write":null,"cost":null`...)
	} else {
		b = num(b, `{"input":`, u.Input)
		b = num(b, `,"output":`, u.Output)
		b = num(b, `,"cache_read":`, u.CacheRead)
		b = num(b, `,"cache_write":`, u.CacheWrite)
		b = append(b, `,"cost":`...)
		if u.Cost == nil {
			b = append(b, "null"...)
		} else {
			b, _ = appendFloat(b, *u.Cost)
		}
	}
	b = num(b, `,"turns":`, u.Turns)
	b = append(b, `,"wall_ms":`...)
	b = appendInt(b, u.WallMS)
	b = append(b, `,"busy_ms":`...)
	b = appendInt(b, u.BusyMS)
	return append(b, '}')
}

// appendObject encodes m as a JSON object with its keys sorted, as
// encoding/json does, each value by enc.
func appendObject[V any](b []byte, m map[string]V, enc func([]byte, V) ([]byte, error)) ([]byte, error) {
	if len(m) > 8 {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sortStrings(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			var err error
			if b, err = enc(b, m[k]); err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	}
	// Most objects are a node's value or a typed output: a few entries,
	// kept on the stack with their values (no second lookup) and sorted
	// in place.
	type entry struct {
		k string
		v V
	}
	var small [8]entry
	es := small[:0]
	for k, v := range m {
		es = append(es, entry{k, v})
	}
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && es[j].k < es[j-1].k; j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
	b = append(b, '{')
	for i := range es {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, es[i].k)
		b = append(b, ':')
		var err error
		if b, err = enc(b, es[i].v); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// sortStrings sorts keys as slices.Sort does, faster for the many short
// keys of usage.json (visit paths, node ids): see sortBy.
func sortStrings(keys []string) { sortBy(keys, func(k *string) string { return *k }) }

// sortBy sorts xs by key as slices.SortFunc with strings.Compare would,
// but each key's first eight bytes are compared as one number, and the
// strings only when those are equal. What is sorted is a small record per
// element; the elements are moved once, at the end.
func sortBy[T any](xs []T, key func(*T) string) {
	type keyed struct {
		head uint64
		i    int
	}
	ks := make([]keyed, len(xs))
	for i := range xs {
		k := key(&xs[i])
		var h uint64
		for j := range 8 {
			h <<= 8
			if j < len(k) {
				h |= uint64(k[j])
			}
		}
		ks[i] = keyed{h, i}
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if a.head != b.head {
			return cmp.Compare(a.head, b.head)
		}
		return strings.Compare(key(&xs[a.i]), key(&xs[b.i]))
	})
	sorted := make([]T, len(xs))
	for j, k := range ks {
		sorted[j] = xs[k.i]
	}
	copy(xs, sorted)
}
