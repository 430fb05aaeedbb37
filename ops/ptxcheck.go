package ops

import (
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"strings"

	"github.com/baracuda-go/baracuda/internal/naming"
	"github.com/baracuda-go/baracuda/kernels/ptx"
)

// ptxParam is one .param of a PTX .entry.
type ptxParam struct {
	typ   string
	size  int
	align int
}

var (
	entryRE = regexp.MustCompile(`(?s)\.visible \.entry (\w+)\(\s*(.*?)\)`)
	paramRE = regexp.MustCompile(`\.param (?:\.align (\d+) )?\.(\w+) \w+(?:\[(\d+)\])?`)
	// ntidRE: an entry's launch bounds, .maxntid after its parameters.
	ntidRE = regexp.MustCompile(`\.visible \.entry (\w+)\([^)]*\)\s*\.maxntid (\d+), 1, 1`)
)

// parseMaxNTID reads each entry's .maxntid (threads per block).
func parseMaxNTID(src string) map[string]int {
	out := map[string]int{}
	for _, m := range ntidRE.FindAllStringSubmatch(src, -1) {
		out[m[1]], _ = strconv.Atoi(m[2])
	}
	return out
}

// parseEntries reads every .entry of a PTX module with its parameter types.
func parseEntries(src string) (map[string][]ptxParam, error) {
	out := map[string][]ptxParam{}
	for _, m := range entryRE.FindAllStringSubmatch(src, -1) {
		var ps []ptxParam
		for _, line := range strings.Split(m[2], ",") {
			pm := paramRE.FindStringSubmatch(line)
			if pm == nil {
				return nil, fmt.Errorf("entry %s: cannot parse parameter %q", m[1], strings.TrimSpace(line))
			}
			p := ptxParam{typ: pm[2]}
			switch p.typ {
			case "u64", "f64", "b64", "s64":
				p.size, p.align = 8, 8
			case "u32", "f32", "b32", "s32":
				p.size, p.align = 4, 4
			case "b8":
				p.size, _ = strconv.Atoi(pm[3])
				p.align, _ = strconv.Atoi(pm[1])
			}
			ps = append(ps, p)
		}
		out[m[1]] = ps
	}
	return out, nil
}

// embeddedEntries reads the parameters and launch bounds of every kernel
// of an embedded module build, and checks that each kernel's PTX is a
// module holding that one entry.
func embeddedEntries(module string) (map[string][]ptxParam, map[string]int, error) {
	names, err := ptx.Entries(module)
	if err != nil {
		return nil, nil, err
	}
	entries, ntids := map[string][]ptxParam{}, map[string]int{}
	for _, name := range names {
		src, err := ptx.Kernel(module, name)
		if err != nil {
			return nil, nil, err
		}
		// The entry's head (name, parameters, directives) ends at its
		// body's brace; what comes before it is the helpers it calls.
		text := string(src)
		if n := strings.Count(text, ".entry "); n != 1 {
			return nil, nil, fmt.Errorf("%s/%s.ptx holds %d entries, not 1", module, name, n)
		}
		head := text[strings.Index(text, ".visible .entry "):]
		if i := strings.IndexByte(head, '{'); i >= 0 {
			head = head[:i]
		}
		es, err := parseEntries(head)
		if err != nil {
			return nil, nil, fmt.Errorf("%s/%s.ptx: %w", module, name, err)
		}
		if _, ok := es[name]; !ok {
			return nil, nil, fmt.Errorf("%s/%s.ptx does not define entry %s", module, name, name)
		}
		maps.Copy(entries, es)
		maps.Copy(ntids, parseMaxNTID(head))
	}
	return entries, ntids, nil
}

// VerifyEmbeddedPTX checks that the PTX embedded in the program matches
// what the plans launch: every kernel Kernels lists is present, with the
// parameters and block size the plans launch it with, and nothing else is.
// It returns one error per mismatch, or nil. It needs no GPU or driver;
// `baracuda selftest` runs it, and a program may run it as a check of its
// build.
func VerifyEmbeddedPTX() []error {
	// It checks every row of the generated support table against the
	// embedded PTX of every build that holds it: the entry exists under
	// the name the speller (naming.Kernel) gives, its parameters have the
	// family's types, sizes and order, its launch bounds are the block the
	// launcher gives it, and no module holds an entry the table lacks.
	var errs []error
	type modRef struct {
		module string
		build  *buildRow
	}
	var mods []modRef
	entries := map[string]map[string][]ptxParam{}
	ntids := map[string]map[string]int{}
	for _, f := range familyTable {
		for i := range buildTable {
			b := &buildTable[i]
			if !b.hasFamily(f.name) {
				continue
			}
			name := f.name + b.suffix
			mods = append(mods, modRef{name, b})
			es, ns, err := embeddedEntries(name)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			entries[name] = es
			ntids[name] = ns
		}
	}
	counted := map[string]int{}
	for i := range kernelTable {
		k := &kernelTable[i]
		f := familyByName(k.family)
		if f == nil {
			errs = append(errs, fmt.Errorf("kernel %s: unknown family %q", k.name, k.family))
			continue
		}
		if want := naming.Kernel(f.prefix, k.op, k.dtype.Suffix(), k.variant); k.name != want {
			errs = append(errs, fmt.Errorf("table name %q, speller gives %q", k.name, want))
		}
		held := false
		for i := range buildTable {
			b := &buildTable[i]
			if !b.holds(k) {
				continue
			}
			held = true
			module := k.family + b.suffix
			got, ok := entries[module][k.name]
			if !ok {
				errs = append(errs, fmt.Errorf("kernel %s is in the table but not in %s.zip", k.name, module))
				continue
			}
			counted[module]++
			errs = append(errs, checkParams(k.name, f, got)...)
			if n, block := ntids[module][k.name], k.threads(f); n != block {
				errs = append(errs, fmt.Errorf("kernel %s in %s.zip: .maxntid %d, the launcher gives %d threads", k.name, module, n, block))
			}
		}
		if !held {
			errs = append(errs, fmt.Errorf("kernel %s is in the table but in no build", k.name))
		}
	}
	for _, m := range mods {
		if es, ok := entries[m.module]; ok && counted[m.module] != len(es) {
			errs = append(errs, fmt.Errorf("%s.zip has %d kernels, the table %d", m.module, len(es), counted[m.module]))
		}
	}
	return errs
}

// checkParams compares one entry's PTX parameters with its family's ABI.
func checkParams(name string, f *familyRow, got []ptxParam) []error {
	if len(got) != len(f.params) {
		return []error{fmt.Errorf("kernel %s: PTX has %d parameters, the %s ABI %d", name, len(got), f.name, len(f.params))}
	}
	var errs []error
	for i, p := range f.params {
		g := got[i]
		if g.typ != p.ptx || g.size != p.size || g.align != p.align {
			errs = append(errs, fmt.Errorf("kernel %s parameter %d (%s): PTX .%s size %d align %d, ABI .%s size %d align %d",
				name, i, p.name, g.typ, g.size, g.align, p.ptx, p.size, p.align))
		}
	}
	return errs
}
