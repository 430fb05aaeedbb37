package ops

import (
	"errors"
	"io/fs"
	"os"
	"regexp"
	"testing"
)

// genSource reads a file of gen/, the CUDA sources that the embedded PTX
// was built from, followed by every gen/ header it includes, directly or
// not (a family header such as scan.cuh includes its pieces). A test binary
// copied to a GPU host runs without the source tree, so there the test
// stops with a skip at this point; go test in the repository (the README's
// test command, CI) always has the files.
func genSource(t *testing.T, name string) []byte {
	t.Helper()
	var all []byte
	names := []string{name}
	seen := map[string]bool{name: true}
	for i := 0; i < len(names); i++ {
		src, err := os.ReadFile("../gen/" + names[i])
		if errors.Is(err, fs.ErrNotExist) {
			t.Skipf("../gen/%s is not here (a test binary run outside the repository): the source check needs the source tree", names[i])
		}
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, src...)
		for _, m := range quotedInclude.FindAllSubmatch(src, -1) {
			if inc := string(m[1]); !seen[inc] {
				seen[inc] = true
				names = append(names, inc)
			}
		}
	}
	return all
}

// quotedInclude matches a header of gen/ included by a CUDA source.
var quotedInclude = regexp.MustCompile(`(?m)^#include "([^"]+)"`)
