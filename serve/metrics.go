package serve

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/flowrun/flow/engine/record"
)

// metrics are what GET /metrics shows, in a registry of the server's own
// (never the global one: two servers in one test binary stay apart).
type metrics struct {
	reg     *prometheus.Registry
	runs    *prometheus.CounterVec // runs that ended, by flow and status
	running prometheus.Gauge
	queued  prometheus.Gauge
	visits  *prometheus.CounterVec // visits that ended, by kind and outcome
	tokens  *prometheus.CounterVec // by agent, model and kind of token
	cost    *prometheus.CounterVec // USD, by agent and model
	fires   *prometheus.CounterVec // schedule fires, by flow and outcome
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flow_runs_total",
			Help: "Runs that ended under this server, by flow and status (succeeded, failed, stopped)."}, []string{"flow", "status"}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{Name: "flow_runs_running", Help: "Runs running now."}),
		queued: prometheus.NewGauge(prometheus.GaugeOpts{Name: "flow_queue_length",
			Help: "Runs waiting for a slot under the server-wide cap (--max-runs)."}),
		visits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flow_visits_total",
			Help: "Visits that ended, by node kind and outcome (ok, or the failure kind)."}, []string{"kind", "outcome"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flow_tokens_total",
			Help: "Tokens agents reported, by agent, model and type (input, output, cache_read, cache_write)."}, []string{"agent", "model", "type"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flow_cost_usd_total",
			Help: "Cost in USD agents reported, by agent and model."}, []string{"agent", "model"}),
		fires: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flow_schedule_fires_total",
			Help: "Schedule fires, by flow and outcome (started, queued, skipped)."}, []string{"flow", "outcome"}),
	}
	m.reg.MustRegister(m.runs, m.running, m.queued, m.visits, m.tokens, m.cost, m.fires)
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// event counts what one engine event says.
func (m *metrics) event(e *record.Event) {
	if e.Type != record.EventVisitEnd {
		return
	}
	outcome := "ok"
	if e.OK != nil && !*e.OK && e.Error != nil {
		outcome = string(e.Error.Kind)
	}
	m.visits.WithLabelValues(string(e.Kind), outcome).Inc()
	if e.Agent == "" || e.Usage == nil {
		return
	}
	for typ, n := range map[string]*int64{"input": e.Usage.Input, "output": e.Usage.Output,
		"cache_read": e.Usage.CacheRead, "cache_write": e.Usage.CacheWrite} {
		if n != nil {
			m.tokens.WithLabelValues(e.Agent, e.Model, typ).Add(float64(*n))
		}
	}
	if e.Usage.Cost != nil {
		m.cost.WithLabelValues(e.Agent, e.Model).Add(*e.Usage.Cost)
	}
}
