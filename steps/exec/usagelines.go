package exec

import "bytes"

// maxUsageLine bounds a stderr line the usage reader holds: a FLOW_USAGE
// report is one short JSON object, and a program may write hundreds of
// megabytes to stderr with no newline (docs/drivers.md: stderr is kept as
// a bounded tail), which a line reader without a bound would hold whole.
const maxUsageLine = 64 << 10

// usageLines hands on each stderr line of at most maxUsageLine bytes; a
// longer line is dropped as it goes, holding at most that much.
type usageLines struct {
	each     func(line []byte)
	buf      []byte
	skipping bool // the current line is too long to be a report
}

// Write reads p; it never fails.
func (u *usageLines) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		seg := p
		if i >= 0 {
			seg = p[:i+1]
		}
		p = p[len(seg):]
		if !u.skipping {
			if len(u.buf)+len(seg) > maxUsageLine+1 {
				u.skipping, u.buf = true, u.buf[:0]
			} else {
				u.buf = append(u.buf, seg...)
			}
		}
		if i >= 0 {
			if !u.skipping {
				u.each(u.buf)
			}
			u.buf, u.skipping = u.buf[:0], false
		}
	}
	return n, nil
}

// Flush hands on a last line without a newline.
func (u *usageLines) Flush() {
	if !u.skipping && len(u.buf) > 0 {
		u.each(u.buf)
	}
	u.buf, u.skipping = nil, false
}
