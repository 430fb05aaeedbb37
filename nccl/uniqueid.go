package nccl

import (
	"encoding/hex"
	"fmt"
	"os"
	"time"
	"unsafe"
)

// UniqueIDBytes is the size of a UniqueID (NCCL_UNIQUE_ID_BYTES).
const UniqueIDBytes = 128

// UniqueID names one communicator while its ranks join it (ncclUniqueId):
// one process makes it with NewUniqueID and sends it to every other rank by
// its own means (a file, a pipe, a key-value store, the network), and each
// rank passes it to InitRank. It is plain bytes: MarshalBinary and Bytes
// give them, UnmarshalBinary and ParseUniqueID take them back, and String
// and ParseUniqueIDHex use hex for text channels such as environment
// variables.
type UniqueID [UniqueIDBytes]byte

// NewUniqueID asks NCCL for a new unique id (ncclGetUniqueId). It opens the
// rendezvous endpoint that the ranks' InitRank calls meet at, so it is made
// once per communicator, in one process.
func NewUniqueID() (UniqueID, error) {
	var id UniqueID
	if err := Load(); err != nil {
		return id, err
	}
	p := new(UniqueID)
	if r := ncclGetUniqueId.call(uintptr(unsafe.Pointer(p))); r != Success {
		return id, callError("ncclGetUniqueId", r, 0)
	}
	return *p, nil
}

// Bytes returns a copy of the id's 128 bytes.
func (id UniqueID) Bytes() []byte { return append([]byte(nil), id[:]...) }

// MarshalBinary returns the id's 128 bytes (encoding.BinaryMarshaler).
func (id UniqueID) MarshalBinary() ([]byte, error) { return id.Bytes(), nil }

// UnmarshalBinary sets id from exactly 128 bytes (encoding.BinaryUnmarshaler).
func (id *UniqueID) UnmarshalBinary(b []byte) error {
	if len(b) != UniqueIDBytes {
		return argErrorf("UniqueID.UnmarshalBinary", 0, ErrUniqueID, "got %d bytes, want %d", len(b), UniqueIDBytes)
	}
	copy(id[:], b)
	return nil
}

// ParseUniqueID returns the id whose bytes are b, which must be exactly 128
// bytes long.
func ParseUniqueID(b []byte) (UniqueID, error) {
	var id UniqueID
	err := id.UnmarshalBinary(b)
	return id, err
}

// String returns the id as 256 hex digits.
func (id UniqueID) String() string { return hex.EncodeToString(id[:]) }

// ParseUniqueIDHex parses the 256 hex digits String writes.
func ParseUniqueIDHex(s string) (UniqueID, error) {
	b, err := hex.DecodeString(s)
	if err != nil {
		return UniqueID{}, argErrorf("ParseUniqueIDHex", 0, ErrUniqueID, "%v", fmt.Errorf("not hex: %w", err))
	}
	return ParseUniqueID(b)
}

// ShareUniqueIDFile passes one communicator's id between processes through
// a file that all of them can read (one host, or a shared file system):
// rank 0 makes the id with NewUniqueID and writes it to path, through a
// rename so that no reader sees half of it; every other rank waits, up to
// timeout, for the file and reads it. path must not hold an older id.
func ShareUniqueIDFile(rank int, path string, timeout time.Duration) (UniqueID, error) {
	if rank == 0 {
		id, err := NewUniqueID()
		if err != nil {
			return id, err
		}
		if err := os.WriteFile(path+".tmp", id[:], 0o600); err != nil {
			return id, err
		}
		return id, os.Rename(path+".tmp", path)
	}
	deadline := time.Now().Add(timeout)
	for {
		b, err := os.ReadFile(path)
		if err == nil {
			return ParseUniqueID(b)
		}
		if time.Now().After(deadline) {
			return UniqueID{}, fmt.Errorf("nccl: rank %d: no unique id in %s after %v: %w", rank, path, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
