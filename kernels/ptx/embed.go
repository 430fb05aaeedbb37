// Package ptx embeds the generated kernels: one standalone PTX module per
// kernel, so that the driver JIT-compiles only the kernels a program
// launches. Each module build of a family (e.g. "reduce_sm80") is one zip
// archive with a deflated <entry>.ptx per kernel; manifest.txt lists every
// file with its size and SHA-256. The files are written by `go run ./gen`
// from the CUDA sources in gen/ with nvcc 11.8; never edit them by hand.
package ptx

import (
	"archive/zip"
	"embed"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
)

//go:embed *.zip
var files embed.FS

// archive is one module build's zip archive, opened on first use.
type archive struct {
	once  sync.Once
	err   error
	files map[string]*zip.File // by entry name
	order []string             // entry names in archive (module) order
}

var archives sync.Map // module name -> *archive

func open(module string) (*archive, error) {
	v, _ := archives.LoadOrStore(module, new(archive))
	a := v.(*archive)
	a.once.Do(func() { a.err = a.read(module) })
	return a, a.err
}

// read indexes the archive without decompressing anything: zip's central
// directory gives each file's place, and the embedded bytes are read in
// place (an embedded file is an io.ReaderAt).
func (a *archive) read(module string) error {
	f, err := files.Open(module + ".zip")
	if err != nil {
		return fmt.Errorf("ptx: no embedded module %q", module)
	}
	st, err := f.Stat()
	if err != nil {
		return err
	}
	r, err := zip.NewReader(f.(io.ReaderAt), st.Size())
	if err != nil {
		return fmt.Errorf("ptx: module %s: %w", module, err)
	}
	a.files = make(map[string]*zip.File, len(r.File))
	for _, zf := range r.File {
		name, ok := strings.CutSuffix(zf.Name, ".ptx")
		if !ok {
			return fmt.Errorf("ptx: module %s holds %s, not a .ptx file", module, zf.Name)
		}
		a.files[name] = zf
		a.order = append(a.order, name)
	}
	return nil
}

// Modules lists the embedded module builds by name ("binary",
// "reduce_sm80", ...), sorted.
func Modules() []string {
	entries, _ := files.ReadDir(".")
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".zip"); ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// Entries lists the kernels of a module build, in the order nvcc wrote them.
func Entries(module string) ([]string, error) {
	a, err := open(module)
	if err != nil {
		return nil, err
	}
	return append([]string(nil), a.order...), nil
}

// Kernel returns the PTX of one kernel of a module build: a standalone
// module holding that kernel's .entry and what it uses. It is decompressed
// on every call; the caller keeps what it needs.
func Kernel(module, entry string) ([]byte, error) {
	a, err := open(module)
	if err != nil {
		return nil, err
	}
	zf := a.files[entry]
	if zf == nil {
		return nil, fmt.Errorf("ptx: module %s has no kernel %s", module, entry)
	}
	rc, err := zf.Open()
	if err != nil {
		return nil, fmt.Errorf("ptx: %s/%s: %w", module, entry, err)
	}
	defer rc.Close()
	src, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("ptx: %s/%s: %w", module, entry, err)
	}
	return src, nil
}
