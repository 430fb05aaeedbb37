// Package ptxsplit cuts a PTX module into standalone modules of one kernel
// each, so that the driver JIT-compiles only the kernels a program
// launches. A kernel's module is the original's preamble (.version,
// .target, .address_size), then every module-level declaration and device
// function the kernel reaches, directly or through other functions, in
// their original order, then the kernel's .entry. The result is a
// function of the input text alone: the generator and the loader cut the
// same module into the same bytes.
package ptxsplit

import (
	"fmt"
	"regexp"
	"strings"
)

// Module is a parsed PTX module.
type Module struct {
	preamble string
	items    []item
	entries  []int // indices into items, in module order
}

// item is one module-level statement: a declaration ending in ';' or a
// function (.entry or .func) with its body.
type item struct {
	text  string
	name  string // the symbol it declares or defines
	entry bool
	refs  []string // other module-level symbols its text names
}

var (
	funcRE  = regexp.MustCompile(`^(?:\.\w+\s+)*\.(entry|func)\s+(?:\([^)]*\)\s*)?([A-Za-z_$%][\w$]*)`)
	identRE = regexp.MustCompile(`[A-Za-z_$%][\w$]*`)
	indexRE = regexp.MustCompile(`\[[^\]]*\]`)
)

// Parse reads a module as nvcc writes it: comments, the preamble
// directives, then module-level statements.
func Parse(src string) (*Module, error) {
	end := strings.Index(src, ".address_size")
	if end < 0 {
		return nil, fmt.Errorf("ptxsplit: no .address_size directive")
	}
	nl := strings.IndexByte(src[end:], '\n')
	if nl < 0 {
		return nil, fmt.Errorf("ptxsplit: the module ends after its preamble")
	}
	end += nl + 1
	m := &Module{preamble: src[:end]}
	rest := src[end:]
	for i := 0; i < len(rest); {
		c := rest[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
			continue
		case strings.HasPrefix(rest[i:], "//"):
			i = skipLine(rest, i)
			continue
		case strings.HasPrefix(rest[i:], "/*"):
			j := strings.Index(rest[i+2:], "*/")
			if j < 0 {
				return nil, fmt.Errorf("ptxsplit: unterminated comment")
			}
			i += j + 4
			continue
		case c != '.':
			return nil, fmt.Errorf("ptxsplit: unexpected text at module level: %.40q", rest[i:])
		}
		j, err := statementEnd(rest, i)
		if err != nil {
			return nil, err
		}
		it, err := newItem(rest[i:j])
		if err != nil {
			return nil, err
		}
		if it.entry {
			m.entries = append(m.entries, len(m.items))
		}
		m.items = append(m.items, it)
		i = j
	}
	symbols := map[string]bool{}
	for _, it := range m.items {
		if !it.entry {
			symbols[it.name] = true
		}
	}
	for k := range m.items {
		it := &m.items[k]
		seen := map[string]bool{it.name: true}
		for _, id := range identRE.FindAllString(it.text, -1) {
			if symbols[id] && !seen[id] {
				seen[id] = true
				it.refs = append(it.refs, id)
			}
		}
	}
	return m, nil
}

// skipLine returns the index just past the end of the line holding i.
func skipLine(s string, i int) int {
	if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
		return i + j + 1
	}
	return len(s)
}

// statementEnd returns the index just past the statement that starts at
// i: a ';' outside brackets, or the '}' that closes a body (with the ';'
// after an initializer's braces).
func statementEnd(s string, i int) (int, error) {
	depth := 0
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '/':
			if strings.HasPrefix(s[j:], "//") {
				j = skipLine(s, j) - 1
			}
		case '(', '{', '[':
			depth++
		case ')', ']':
			depth--
		case '}':
			depth--
			if depth == 0 {
				k := j + 1
				for k < len(s) && (s[k] == ' ' || s[k] == '\t' || s[k] == '\n' || s[k] == '\r') {
					k++
				}
				if k < len(s) && s[k] == ';' {
					return k + 1, nil
				}
				return j + 1, nil
			}
		case ';':
			if depth == 0 {
				return j + 1, nil
			}
		}
		if depth < 0 {
			return 0, fmt.Errorf("ptxsplit: unbalanced brackets in the statement at %.40q", s[i:])
		}
	}
	return 0, fmt.Errorf("ptxsplit: unterminated statement at %.40q", s[i:])
}

func newItem(text string) (item, error) {
	if m := funcRE.FindStringSubmatch(text); m != nil {
		return item{text: text, name: m[2], entry: m[1] == "entry"}, nil
	}
	head := text
	if k := strings.IndexAny(head, "=;"); k >= 0 {
		head = head[:k]
	}
	fields := strings.Fields(indexRE.ReplaceAllString(head, ""))
	if len(fields) == 0 {
		return item{}, fmt.Errorf("ptxsplit: cannot name the statement %.40q", text)
	}
	name := fields[len(fields)-1]
	if !identRE.MatchString(name) || identRE.FindString(name) != name {
		return item{}, fmt.Errorf("ptxsplit: cannot name the statement %.40q", text)
	}
	return item{text: text, name: name}, nil
}

// Entries lists the module's kernels in module order.
func (m *Module) Entries() []string {
	out := make([]string, len(m.entries))
	for i, k := range m.entries {
		out[i] = m.items[k].name
	}
	return out
}

// Entry returns the standalone module of kernel name: the preamble, what
// the kernel reaches, and its .entry.
func (m *Module) Entry(name string) (string, error) {
	at := -1
	for _, k := range m.entries {
		if m.items[k].name == name {
			at = k
			break
		}
	}
	if at < 0 {
		return "", fmt.Errorf("ptxsplit: the module has no entry %s", name)
	}
	need := map[string]bool{}
	var visit func(refs []string)
	visit = func(refs []string) {
		for _, r := range refs {
			if need[r] {
				continue
			}
			need[r] = true
			for k := range m.items {
				if it := &m.items[k]; !it.entry && it.name == r {
					visit(it.refs)
				}
			}
		}
	}
	visit(m.items[at].refs)
	var b strings.Builder
	b.WriteString(m.preamble)
	for k := range m.items {
		if it := &m.items[k]; k == at || !it.entry && need[it.name] {
			b.WriteString("\n")
			b.WriteString(it.text)
			b.WriteString("\n")
		}
	}
	return b.String(), nil
}
