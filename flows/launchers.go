package flows

import (
	"cmp"
	"strings"
)

// launchers run a command given after their own options somewhere else: in
// a container, a pod, a namespace or a sandbox.
var launchers = map[string]bool{
	"docker": true, "podman": true, "nerdctl": true, "kubectl": true, "oc": true, "nsenter": true,
	"firejail": true, "bwrap": true, "systemd-nspawn": true, "lxc": true, "incus": true,
	"flatpak-spawn": true, "distrobox-enter": true, "toolbox": true,
}

// launcher judges a command that runs another one somewhere else (docker
// run IMAGE CMD…, kubectl exec POD -- CMD…): its own options are too many
// to skip one by one, so the command it runs is taken to start at the
// first word that names a shell, an evaluator or a wrapper, and judged
// from there; the words before it are data (an image, a container, an
// option's operand).
func (v *verdict) launcher(ws []word, pos int, cmd, via string, depth int) {
	subcmd := true // still reading subcommands: docker container exec
	for k := pos + 1; k < len(ws); k++ {
		a := ws[k]
		subcmd = subcmd && a.known && !strings.HasPrefix(a.text, "-")
		if !a.known || !isEvaluator(commandName(a.text)) || subcmd && a.text == "exec" {
			continue
		}
		sub := verdict{why: make([]string, len(ws)), nested: v.nested}
		sub.from(ws, k, join(via, cmd), depth+1)
		for i := range ws {
			if sub.why[i] != "" && v.why[i] == "" {
				v.why[i] = sub.why[i]
			}
		}
		v.stdin = cmp.Or(v.stdin, sub.stdin)
		v.runs = cmp.Or(v.runs, sub.runs)
		return
	}
}
