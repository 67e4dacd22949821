package engine

// InputError is a run input that does not fit the flow's declared input.
// The command line reports it with exit code 2, before anything runs.
// Err, a *schema.ValueError, names the field.
type InputError struct {
	Msg string
	Err error
}

func (e *InputError) Error() string { return e.Msg }

func (e *InputError) Unwrap() error { return e.Err }

// RefusedError says the run was refused before it started (e.g. an ask with
// no default in an unattended run).
type RefusedError struct{ Msg string }

func (e *RefusedError) Error() string { return e.Msg }
