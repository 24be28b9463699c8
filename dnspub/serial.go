package dnspub

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"time"
)

// serialStore decides SOA serials and remembers them across restarts.
//
// A zone keeps its serial while its content (zone.Zone.Digest) is
// unchanged. A changed zone gets max(last+1, now in Unix seconds) in serial
// arithmetic (RFC 1982): it always increases and reads as a time.
//
// Serials never go backwards, across reloads, restarts and failures,
// because a version is served only once the state file holds its serials
// (see commit): a version whose state cannot be written is not served. A
// zone that is removed is remembered until every secondary must have
// dropped its copy (the zone's SOA expire after the removal), so that it
// comes back above the serial those copies have, even when changes ran the
// serial ahead of the clock.
//
// Without a state file (the built-in example), only the clock carries
// serials across restarts: they keep increasing unless the clock goes
// backwards, or changes came faster than one a second before the restart
// (last+1 then ran ahead of the clock, and a restart falls back to it).
type serialStore struct {
	path  string // "" for none
	zones map[string]serialState
	// written is the state file's content as last read or written, so
	// that an unchanged state is not written again.
	written []byte
	// write replaces the state file; tests inject failures here.
	write func(path string, data []byte) error
}

type serialState struct {
	Serial uint32 `json:"serial"`
	Digest string `json:"digest"`
	// Removed is when the zone stopped being served (Unix seconds); 0
	// while it is served.
	Removed int64 `json:"removed,omitempty"`
	// Expire is the zone's SOA expire when it was last served: how long a
	// secondary may serve its copy after last hearing from us.
	Expire uint32 `json:"expire,omitempty"`
}

type stateFile struct {
	Comment string                 `json:"comment"`
	Zones   map[string]serialState `json:"zones"`
}

// maxStateFile bounds the state file: at about 200 bytes a zone it would
// take five million zones, far more than a config (64 MiB at most) has.
const maxStateFile = 1 << 30

// loadSerials reads the state file at path ("" for none).
func loadSerials(path string) (*serialStore, error) {
	s := &serialStore{path: path, zones: map[string]serialState{}, write: writeFileAtomic}
	if path == "" {
		return s, nil
	}
	// A state that cannot be read stops the start rather than starting
	// without it: serials from the clock alone could be lower than those
	// served (changes ran them ahead of the clock, or the clock went
	// back), and secondaries would ignore every change until the serial
	// came back above theirs. Only the operator knows whether the file
	// can be put back.
	const fix = "put back the file serve wrote there, or remove it to restart serials from the current time"
	b, err := readOwnFile(path, maxStateFile)
	if errors.Is(err, fs.ErrNotExist) {
		// No file: a first start, unless the path is a symbolic link
		// to a file that is gone (a volume not mounted, say).
		if target, lerr := os.Readlink(path); lerr == nil {
			return nil, fmt.Errorf("serial state %s is a symbolic link to %s, which does not exist: %s", path, target, fix)
		}
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read serial state %s: %w; %s", path, err, fix)
	}
	var f stateFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("serial state %s is corrupt (%v): fix or delete it; serials then restart from the current time", path, err)
	}
	maps.Copy(s.zones, f.Zones)
	s.written = b
	return s, nil
}

// serialGreater reports a > b in serial arithmetic (RFC 1982 §3.2).
func serialGreater(a, b uint32) bool {
	return a != b && (a-b) < 1<<31
}

// serialTxn is the serial state of a version being built: a copy of the
// store's, committed to it (and the state file) only if the version is
// published.
type serialTxn struct {
	zones map[string]serialState
}

func (s *serialStore) begin() *serialTxn {
	return &serialTxn{zones: maps.Clone(s.zones)}
}

// next returns the serial for a zone with this content: the last one when
// the content is unchanged, else a strictly greater one.
func (t *serialTxn) next(origin string, digest [32]byte, now time.Time) uint32 {
	d := hex.EncodeToString(digest[:])
	last, known := t.zones[origin]
	if known && last.Digest == d {
		return last.Serial
	}
	serial := uint32(now.Unix())
	if known && !serialGreater(serial, last.Serial) {
		serial = last.Serial + 1
	}
	if serial == 0 {
		// 0 confuses some secondaries; skip it.
		serial = 1
	}
	return serial
}

// set records the serial a zone is served with.
func (t *serialTxn) set(origin string, serial uint32, digest [32]byte, expire uint32) {
	t.zones[origin] = serialState{Serial: serial, Digest: hex.EncodeToString(digest[:]), Expire: expire}
}

// retire marks the zones not in live as removed at now, and forgets those
// removed longer ago than their SOA expire, when no secondary still serves
// them, once the clock has passed their serial, so that a zone added back
// then starts above it anyway. A clock that went backwards forgets nothing.
func (t *serialTxn) retire(live map[string]bool, now time.Time) {
	for o, st := range t.zones {
		switch {
		case live[o]:
		case st.Removed == 0:
			st.Removed = now.Unix()
			t.zones[o] = st
		case now.Unix()-st.Removed > int64(st.Expire) && serialGreater(uint32(now.Unix()), st.Serial):
			delete(t.zones, o)
		}
	}
}

// commit makes t the store's state, writing the state file first when
// the state changed. On error the store is unchanged: the caller must not
// serve the version t belongs to.
func (s *serialStore) commit(t *serialTxn) error {
	if s.path != "" {
		b, err := json.MarshalIndent(stateFile{
			Comment: "SOA serials of grpc-config-dns serve; keep this file so that serials never go backwards",
			Zones:   t.zones,
		}, "", "  ")
		if err != nil {
			return err
		}
		b = append(b, '\n')
		if !bytes.Equal(b, s.written) {
			if err := s.write(s.path, b); err != nil {
				return fmt.Errorf("writing serial state %s: %w", s.path, err)
			}
			s.written = b
		}
	}
	s.zones = t.zones
	return nil
}

// writeFileAtomic replaces path with data: a temporary file beside it,
// synced, renamed over it, and the directory synced, so that after a crash
// or power loss the file holds either the old state or the new one.
func writeFileAtomic(path string, data []byte) error {
	return writeAtomic(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// writeAtomic is writeFileAtomic of what write writes. A symlink to a
// regular file is followed: the file it names (on a mounted volume, say)
// is the one replaced. Renamed over, the link itself would become a local
// file, and the volume's copy would stop moving: after the container
// restarted from it, serials could go back. A symlink to anything else
// (a device, a named pipe, nothing) is refused: the rename would replace
// what it names, /dev/zero say, with a file.
func writeAtomic(path string, write func(io.Writer) error) error {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(path)
		if err != nil {
			return fmt.Errorf("%s is a symlink to nothing usable: %w", path, err)
		}
		if ti, err := os.Stat(target); err != nil || !ti.Mode().IsRegular() {
			return fmt.Errorf("%s is a symlink to %s, which is not a regular file: not written", path, target)
		}
		path = target
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// NextSerial returns the SOA serial `serve` would publish for z (whose own
// serial is ignored) given the state file: the persisted serial when the
// content is unchanged, else a greater one derived from now. It writes
// nothing. stateFile "" means no state.
func NextSerial(stateFile string, origin string, digest [32]byte, now time.Time) (uint32, error) {
	s, err := loadSerials(stateFile)
	if err != nil {
		return 0, err
	}
	return s.begin().next(origin, digest, now), nil
}
