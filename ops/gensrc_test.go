package ops

import (
	"errors"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"testing"
)

// genSource reads a file of gen/, the CUDA sources that the embedded PTX
// was built from. A test binary copied to a GPU host runs without the
// source tree, so there the test stops with a skip at this point; go test
// in the repository (the README's test command, CI) always has the file.
func genSource(t *testing.T, name string) []byte {
	t.Helper()
	src, err := os.ReadFile("../gen/" + name)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skipf("../gen/%s is not here (a test binary run outside the repository): the source check needs the source tree", name)
	}
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// cuhDefine returns the value of an integer #define in a CUDA source.
func cuhDefine(src []byte, name string) (int, bool) {
	m := regexp.MustCompile(`(?m)^#define ` + name + ` (\d+)$`).FindSubmatch(src)
	if m == nil {
		return 0, false
	}
	v, err := strconv.Atoi(string(m[1]))
	return v, err == nil
}
