package nccl_test

import (
	"bytes"
	"encoding"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baracuda-go/baracuda/nccl"
)

var (
	_ encoding.BinaryMarshaler   = nccl.UniqueID{}
	_ encoding.BinaryUnmarshaler = (*nccl.UniqueID)(nil)
)

func TestUniqueIDRoundTrip(t *testing.T) {
	var id nccl.UniqueID
	for i := range id {
		id[i] = byte(i*7 + 3)
	}
	b, err := id.MarshalBinary()
	if err != nil || len(b) != nccl.UniqueIDBytes {
		t.Fatalf("MarshalBinary: %d bytes, %v", len(b), err)
	}
	var back nccl.UniqueID
	if err := back.UnmarshalBinary(b); err != nil || back != id {
		t.Fatalf("UnmarshalBinary: %v, equal %v", err, back == id)
	}
	b[0] ^= 0xff // Bytes and MarshalBinary return copies
	if id[0] == b[0] {
		t.Error("MarshalBinary shares memory with the id")
	}
	p, err := nccl.ParseUniqueID(id.Bytes())
	if err != nil || p != id {
		t.Fatalf("ParseUniqueID(Bytes()): %v", err)
	}
	h, err := nccl.ParseUniqueIDHex(id.String())
	if err != nil || h != id {
		t.Fatalf("ParseUniqueIDHex(String()): %v", err)
	}
	if !bytes.Equal(id.Bytes(), id[:]) {
		t.Error("Bytes differs from the id")
	}
}

func TestUniqueIDBadInput(t *testing.T) {
	for _, n := range []int{0, 127, 129} {
		if _, err := nccl.ParseUniqueID(make([]byte, n)); !errors.Is(err, nccl.ErrUniqueID) {
			t.Errorf("ParseUniqueID(%d bytes): %v, want ErrUniqueID", n, err)
		}
	}
	if _, err := nccl.ParseUniqueIDHex("zz"); !errors.Is(err, nccl.ErrUniqueID) {
		t.Errorf("ParseUniqueIDHex(zz): %v, want ErrUniqueID", err)
	}
}

// TestShareUniqueIDFileReader: a rank other than 0 reads the id rank 0
// wrote, and names the path when none comes in time.
func TestShareUniqueIDFileReader(t *testing.T) {
	var want nccl.UniqueID
	for i := range want {
		want[i] = byte(3 * i)
	}
	path := filepath.Join(t.TempDir(), "id")
	if err := os.WriteFile(path, want[:], 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := nccl.ShareUniqueIDFile(1, path, time.Second)
	if err != nil || got != want {
		t.Fatalf("ShareUniqueIDFile: %v, %v; want the written id", got, err)
	}
	missing := filepath.Join(t.TempDir(), "none")
	if _, err := nccl.ShareUniqueIDFile(2, missing, 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("ShareUniqueIDFile without a file: %v, want an error naming %s", err, missing)
	}
}
