package ptx

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestManifestMatchesArchives: every file manifest.txt lists is in the
// embedded archives with its size and SHA-256, every kernel of the
// archives is listed, and each is a module holding its one entry.
func TestManifestMatchesArchives(t *testing.T) {
	f, err := os.Open("manifest.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	listed := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var path, sum string
		var size int
		if _, err := fmt.Sscanf(line, "%s %d sha256:%s", &path, &size, &sum); err != nil {
			t.Fatalf("manifest line %q: %v", line, err)
		}
		listed[path] = fmt.Sprintf("%d %s", size, sum)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, mod := range Modules() {
		names, err := Entries(mod)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			src, err := Kernel(mod, name)
			if err != nil {
				t.Fatal(err)
			}
			path := mod + "/" + name + ".ptx"
			sum := sha256.Sum256(src)
			if got, want := fmt.Sprintf("%d %s", len(src), hex.EncodeToString(sum[:])), listed[path]; got != want {
				t.Errorf("%s: embedded %q, manifest %q", path, got, want)
			}
			if n := strings.Count(string(src), ".entry "); n != 1 || !strings.Contains(string(src), ".visible .entry "+name+"(") {
				t.Errorf("%s holds %d entries, want only %s", path, n, name)
			}
			seen++
		}
	}
	if seen != len(listed) {
		t.Errorf("the archives hold %d kernels, the manifest lists %d", seen, len(listed))
	}
	if _, err := Kernel("reduce", "no_such_kernel"); err == nil {
		t.Error("a missing kernel gave no error")
	}
	if _, err := Entries("no_such_module"); err == nil {
		t.Error("a missing module gave no error")
	}
}
