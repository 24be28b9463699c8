package dnspub

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// serialStore decides SOA serials and remembers them across restarts.
//
// A zone keeps its serial while its content (zone.Zone.Digest) is
// unchanged. A changed zone gets max(last+1, now in Unix seconds) in serial
// arithmetic (RFC 1982): it always increases, reads as a time, and cannot
// go backwards across restarts because the last serial and digest of each
// zone are written to the state file before the new version is served.
// Without a state file (the built-in example), only the clock carries
// serials across restarts: they keep increasing unless the clock goes
// backwards, or changes came faster than one a second before the restart
// (last+1 then ran ahead of the clock, and a restart falls back to it).
type serialStore struct {
	path  string // "" for none
	zones map[string]serialState
}

type serialState struct {
	Serial uint32 `json:"serial"`
	Digest string `json:"digest"`
}

type stateFile struct {
	Comment string                 `json:"comment"`
	Zones   map[string]serialState `json:"zones"`
}

func loadSerials(path string) (*serialStore, error) {
	s := &serialStore{path: path, zones: map[string]serialState{}}
	if path == "" {
		return s, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading serial state: %w", err)
	}
	var f stateFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("serial state %s is corrupt (%v): fix or delete it; serials then restart from the current time", path, err)
	}
	for k, v := range f.Zones {
		s.zones[k] = v
	}
	return s, nil
}

// serialGreater reports a > b in serial arithmetic (RFC 1982 §3.2).
func serialGreater(a, b uint32) bool {
	return a != b && (a-b) < 1<<31
}

// next returns the serial for a zone with this content: the current one
// when the content is unchanged, else a strictly greater one.
func (s *serialStore) next(origin string, digest [32]byte, now time.Time) (serial uint32, changed bool) {
	d := hex.EncodeToString(digest[:])
	last, known := s.zones[origin]
	if known && last.Digest == d {
		return last.Serial, false
	}
	serial = uint32(now.Unix())
	if known && !serialGreater(serial, last.Serial) {
		serial = last.Serial + 1
	}
	if serial == 0 {
		// 0 confuses some secondaries; skip it.
		serial = 1
	}
	s.zones[origin] = serialState{Serial: serial, Digest: d}
	return serial, true
}

// forget drops zones no longer configured, so that a zone removed and
// added back later starts from the clock (still above any old serial,
// as time has passed).
func (s *serialStore) keepOnly(origins map[string]bool) {
	for o := range s.zones {
		if !origins[o] {
			delete(s.zones, o)
		}
	}
}

// save writes the state atomically: a temporary file beside it, synced,
// then renamed over it.
func (s *serialStore) save() error {
	if s.path == "" {
		return nil
	}
	b, err := json.MarshalIndent(stateFile{
		Comment: "SOA serials of grpc-config-dns serve; keep this file so that serials never go backwards",
		Zones:   s.zones,
	}, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), filepath.Base(s.path)+".tmp*")
	if err != nil {
		return fmt.Errorf("writing serial state: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("writing serial state: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("writing serial state: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing serial state: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		return fmt.Errorf("writing serial state: %w", err)
	}
	return nil
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
	serial, _ := s.next(origin, digest, now)
	return serial, nil
}
