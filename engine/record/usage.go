package record

// Usage is what agents reported, in the one vocabulary of docs/drivers.md. A nil
// field was not reported: it is recorded as null, never as zero.
type Usage struct {
	Input      *int64   `json:"input"`
	Output     *int64   `json:"output"`
	CacheRead  *int64   `json:"cache_read"`
	CacheWrite *int64   `json:"cache_write"`
	Cost       *float64 `json:"cost"`
	Turns      *int64   `json:"turns"`
	WallMS     int64    `json:"wall_ms"`
	BusyMS     int64    `json:"busy_ms"`
	// Partial says the provider's final figure never came: the turn ended
	// (stopped, cut off, killed) before it, and the figures are what its
	// stream had reported by then.
	Partial bool `json:"partial,omitempty"`
	// Unknown says a figure the provider reported was not a whole number
	// of tokens of 0 or more (or a cost of 0 or more): it was not counted,
	// the figures are not the turn's, and budgets count the turn as what
	// it reserved (docs/resume-and-budgets.md).
	Unknown bool `json:"unknown,omitempty"`
}

// Add adds what o reports to u. A field stays nil (not reported) until
// some usage added reports it; a sum with a partial part is partial.
func (u *Usage) Add(o Usage) {
	u.Partial = u.Partial || o.Partial
	u.Unknown = u.Unknown || o.Unknown
	u.Input = addInt(u.Input, o.Input)
	u.Output = addInt(u.Output, o.Output)
	u.CacheRead = addInt(u.CacheRead, o.CacheRead)
	u.CacheWrite = addInt(u.CacheWrite, o.CacheWrite)
	u.Turns = addInt(u.Turns, o.Turns)
	if o.Cost != nil {
		c := *o.Cost
		if u.Cost != nil {
			c += *u.Cost
		}
		u.Cost = &c
	}
	u.WallMS += o.WallMS
	u.BusyMS += o.BusyMS
}

func addInt(a, b *int64) *int64 {
	if b == nil {
		return a
	}
	s := *b
	if a != nil {
		s += *a
	}
	return &s
}

// Tokens is every token the provider billed, as far as reported: input,
// output, cache reads and cache writes (input excludes the cache, on
// every driver: docs/drivers.md#usage). Budgets count these.
func (u Usage) Tokens() int64 {
	var n int64
	for _, p := range []*int64{u.Input, u.Output, u.CacheRead, u.CacheWrite} {
		if p != nil {
			n += *p
		}
	}
	return n
}

// Spent reports whether u records tokens or cost: a visit that spent
// something is fsynced (docs/run-directory.md).
func (u *Usage) Spent() bool {
	return u != nil && (u.Tokens() > 0 || u.Cost != nil && *u.Cost > 0)
}

// Counted is what a turn whose usage is unknown counts against a budget
// (docs/resume-and-budgets.md#budgets): what it reserved (tokens and cost,
// or its live count when that is more), or what it reported when that is
// more — never less, so that no report refunds a budget. A turn that
// reserved nothing (the run's first, which nothing priced) counts as what
// was left of the budget: nothing says it spent less.
func (u *Usage) Counted(tokens int64, cost float64, leftTokens int64, leftCost float64) *Usage {
	tokens = max(tokens, u.Tokens())
	if tokens <= 0 {
		tokens = max(leftTokens, 0)
	}
	if u.Cost != nil {
		cost = max(cost, *u.Cost)
	}
	if cost <= 0 {
		cost = max(leftCost, 0)
	}
	return &Usage{Input: &tokens, Cost: &cost, Unknown: true}
}
