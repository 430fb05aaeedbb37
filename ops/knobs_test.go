package ops

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// knobName matches a BARACUDA_ environment variable as a Go string literal
// or as a name in the docs.
var (
	knobLiteral = regexp.MustCompile(`"(BARACUDA_[A-Z0-9_]+)"`)
	knobRow     = regexp.MustCompile("(?m)^\\| `(BARACUDA_[A-Z0-9_]+)` \\|")
)

// repoGoFiles returns the module's Go files (paths and contents), tests
// included, outside hidden and git-ignored build folders.
func repoGoFiles(t *testing.T) map[string]string {
	t.Helper()
	if _, err := os.Stat(filepath.Join("..", "ops", "knobs.go")); errors.Is(err, fs.ErrNotExist) {
		t.Skip("../ops/knobs.go is not here (a test binary run outside the repository): the source check needs the source tree")
	}
	files := map[string]string{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != ".." && (strings.HasPrefix(name, ".") || name == "build" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files[path] = string(src)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestKnobsOnePlace: the package reads its environment knobs through knob
// alone; every BARACUDA_ variable the module's code names is documented in
// README.md or CONTRIBUTING.md; and every row of CONTRIBUTING.md's knob
// table names a variable the code still reads.
func TestKnobsOnePlace(t *testing.T) {
	files := repoGoFiles(t)
	for path, src := range files {
		dir, name := filepath.Split(path)
		if filepath.Clean(dir) == filepath.Join("..", "ops") && !strings.HasSuffix(name, "_test.go") &&
			name != "knobs.go" && strings.Contains(src, "os.Getenv(") {
			t.Errorf("%s reads the environment with os.Getenv: read knobs through knob (knobs.go)", path)
		}
	}
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	contributing, err := os.ReadFile(filepath.Join("..", "CONTRIBUTING.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs := string(readme) + string(contributing)
	var named []string
	for path, src := range files {
		for _, m := range knobLiteral.FindAllStringSubmatch(src, -1) {
			if !slices.Contains(named, m[1]) {
				named = append(named, m[1])
			}
			if !strings.Contains(docs, m[1]) {
				t.Errorf("%s names %s, which neither README.md nor CONTRIBUTING.md documents", path, m[1])
			}
		}
	}
	rows := knobRow.FindAllStringSubmatch(string(contributing), -1)
	if len(rows) == 0 {
		t.Fatal("CONTRIBUTING.md: no row of the developer knobs table found")
	}
	for _, m := range rows {
		if !slices.Contains(named, m[1]) {
			t.Errorf("CONTRIBUTING.md's knob table lists %s, which no Go file names", m[1])
		}
	}
}
