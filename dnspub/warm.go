package dnspub

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/grpc-config-dns/grpc-config-dns/dnspub/internal/wire"
	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// A warm start answers from the answers a previous run of the same binary
// built from the same config, written beside the state file, while the
// config is read again in the background: reading and validating the
// config of a large fleet takes seconds of CPU (100 000 services: about
// 14 s on two cores), loading its answers a fraction of a second. NSD's
// compiled zone database and Knot's journal serve restarts the same way.
//
// The answers are used only when nothing they depend on has changed: the
// config's bytes (SHA-256), the build (the SHA-256 of the running
// executable's image: another build may answer differently), and every
// zone's serial and content digest in the state file (a serial persisted
// since would be served lower). The file carries a CRC-32C of its bytes. Anything else, or any
// doubt, is a cold start, logged with the reason: a path that is not a
// regular file (a named pipe, a device, a directory) or holds more than
// answers take is not even read (readOwnFile). Until the background
// read ends, transfers and signed queries are answered SERVFAIL
// (secondaries retry) and the snapshot is not offered to Published.
//
// The file is written after a load that changed what is served, from the
// latest snapshot, in the background and atomically (a temporary file
// renamed over), only for configs of at least warmAbove bytes.

// warmAbove is the config size from which answers are kept for a warm
// start: below it a cold start takes milliseconds (a variable for tests).
var warmAbove = 1 << 20

// warmGate, when set, holds the background read of a warm start until it
// is closed (tests: to ask what is answered before the config is read).
var warmGate chan struct{}

// warmDelay is how long after a change the answers are written, so that a
// burst of reloads writes them once (a variable for tests).
var warmDelay = 2 * time.Second

const warmMagic = "grpc-config-dns answers v1\n"

// maxWarmHeader bounds the header's JSON: a few hundred bytes a zone.
const maxWarmHeader = 64 << 20

// maxWarmFile bounds the file of answers: those of the largest config
// (64 MiB) take a few times its size, so a larger file is not one serve
// wrote, and is not read.
const maxWarmFile = 1 << 30

// warmHeader is what the answers were built from.
type warmHeader struct {
	Binary string       `json:"binary"`
	Config string       `json:"config"`
	Server model.Server `json:"server"`
	Zones  []warmZone   `json:"zones"`
}

type warmZone struct {
	Origin string `json:"origin"`
	Serial uint32 `json:"serial"`
	Digest string `json:"digest"`
}

// executableSum identifies the running binary: the SHA-256 of its image.
// The image, not what its path names now: an upgrade renames the new
// build over the path while the old one still runs, and the old run's
// answers must not then carry the new build's identity. On Linux
// /proc/self/exe is the image the process runs, whatever happened to its
// path; elsewhere the path is read, as early as New can (it starts the
// hash). Tests replace it.
var executableSum = sync.OnceValues(func() (string, error) {
	path := "/proc/self/exe"
	if runtime.GOOS != "linux" {
		var err error
		if path, err = os.Executable(); err != nil {
			return "", err
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
})

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// writeWarm writes the answers of snap, built from the config whose
// SHA-256 is sum, to path.
func writeWarm(path string, snap *snapshot, sum [sha256.Size]byte) error {
	bin, err := executableSum()
	if err != nil {
		return fmt.Errorf("identifying the executable: %w", err)
	}
	h := warmHeader{Binary: bin, Config: hex.EncodeToString(sum[:]), Server: snap.cfg.Server}
	for _, zc := range snap.cfg.Zones {
		ze := snap.zones[zc.Origin]
		d := ze.cur.Digest()
		h.Zones = append(h.Zones, warmZone{Origin: zc.Origin, Serial: ze.cur.Serial(), Digest: hex.EncodeToString(d[:])})
	}
	hb, err := json.Marshal(h)
	if err != nil {
		return err
	}
	return writeAtomic(path, func(w io.Writer) error {
		crc := crc32.New(castagnoli)
		bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 256<<10)
		bw.WriteString(warmMagic)
		binary.Write(bw, binary.BigEndian, uint32(len(hb)))
		bw.Write(hb)
		if _, err := snap.table.WriteTo(bw); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		return binary.Write(w, binary.BigEndian, crc.Sum32())
	})
}

// errNoWarm is readWarm's answer when there is no file to read.
var errNoWarm = errors.New("no answers kept")

// readWarm reads the answers at path, if they were built by this binary
// from the config text with the serials of serials, and returns the
// text's SHA-256 (once there is a file to compare it with: a first start
// has none, and hashing 30 MB takes 20 ms).
func readWarm(path string, text []byte, serials *serialStore) (*warmHeader, *wire.Table, [sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	h, t, err := readWarmFile(path, serials, func() string {
		sum = sha256.Sum256(text)
		return hex.EncodeToString(sum[:])
	})
	return h, t, sum, err
}

// readWarmFile is readWarm; configSum gives the hex SHA-256 of the config.
func readWarmFile(path string, serials *serialStore, configSum func() string) (*warmHeader, *wire.Table, error) {
	b, err := readOwnFile(path, maxWarmFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, errNoWarm
	}
	if err != nil {
		return nil, nil, err
	}
	if len(b) < len(warmMagic)+8 || string(b[:len(warmMagic)]) != warmMagic {
		return nil, nil, errors.New("not a file of answers of this version")
	}
	body, tail := b[:len(b)-4], b[len(b)-4:]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(tail) {
		return nil, nil, errors.New("damaged (its checksum does not match)")
	}
	body = body[len(warmMagic):]
	n := binary.BigEndian.Uint32(body)
	if n > maxWarmHeader || int(n) > len(body)-4 {
		return nil, nil, fmt.Errorf("damaged: its header declares %d bytes, the file holds %d after it", n, len(body)-4)
	}
	var h warmHeader
	dec := json.NewDecoder(bytes.NewReader(body[4 : 4+n]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return nil, nil, fmt.Errorf("damaged header: %v", err)
	}
	bin, err := executableSum()
	switch {
	case err != nil:
		return nil, nil, fmt.Errorf("identifying the executable: %w", err)
	case h.Binary != bin:
		return nil, nil, errors.New("written by another build of grpc-config-dns")
	case h.Config != configSum():
		return nil, nil, errors.New("built from another version of the config")
	}
	if why := serials.matches(h.Zones); why != "" {
		return nil, nil, errors.New(why)
	}
	t, err := wire.ReadTable(body[4+n:])
	if err != nil {
		return nil, nil, err
	}
	return &h, t, nil
}

// matches says why zones (origin, serial, digest) are not exactly the
// zones the state says are served, or "" when they are.
func (s *serialStore) matches(zones []warmZone) string {
	live := 0
	for _, st := range s.zones {
		if st.Removed == 0 {
			live++
		}
	}
	if live != len(zones) {
		return fmt.Sprintf("the state file has %d zones served, the answers %d", live, len(zones))
	}
	for _, z := range zones {
		st, ok := s.zones[z.Origin]
		if !ok || st.Removed != 0 || st.Serial != z.Serial || st.Digest != z.Digest {
			return fmt.Sprintf("zone %s: the state file's serial or content differs from the answers' (serial %d)", z.Origin, z.Serial)
		}
	}
	return ""
}

// warmPath is where the answers are kept: beside the state file, which
// they must agree with.
func (s *Server) warmPath() string {
	if s.feed != nil || s.opts.ConfigFile == "" || s.opts.StateFile == "" || s.opts.WarmFile == "-" {
		return ""
	}
	if s.opts.WarmFile != "" {
		return s.opts.WarmFile
	}
	return strings.TrimSuffix(s.opts.StateFile, ".serial") + ".answers"
}

// startWarm serves the answers kept by a previous run, if they fit text,
// and reads text in the background. It reports whether it did.
func (s *Server) startWarm(text []byte, start time.Time) bool {
	path := s.warmPath()
	if path == "" || len(text) < s.warmAbove {
		return false
	}
	removeStaleTemps(path)
	h, t, sum, err := readWarm(path, text, s.serials)
	if err != nil {
		if !errors.Is(err, errNoWarm) {
			s.log.Info("not starting from the answers kept: reading the config first", "file", path, "why", err.Error())
		}
		return false
	}
	serials := make(map[string]uint32, len(h.Zones))
	for _, z := range h.Zones {
		serials[z.Origin] = z.Serial
	}
	s.snap.Store(&snapshot{cfg: &model.Config{Server: h.Server}, table: t, warm: serials})
	s.keptSum = sum
	s.log.Info("answering from the answers kept by the last run; reading the config in the background", "file", path, "zones", len(h.Zones), "took", time.Since(start).Round(time.Microsecond))
	// The lock is taken here, not in the goroutine, so that no reload or
	// watcher load can come before the first one. Shutdown does not wait
	// for the read (seconds of CPU that nothing can interrupt): once it
	// has begun, the read publishes nothing.
	s.reloadMu.Lock()
	gate := warmGate
	go func() {
		defer s.reloadMu.Unlock()
		if gate != nil {
			<-gate
		}
		_, err := s.loadLocked(text, start, "start", func(*model.Config, *snapshot) string {
			select {
			case <-s.done:
				return "the server is shutting down"
			default:
				return ""
			}
		})
		s.firstLoad <- err
		close(s.firstLoad)
		// The load gave memory back while this goroutine still held the
		// config's text (32 MB at 100 000 services): give that back too.
		text = nil
		debug.FreeOSMemory()
	}()
	return true
}

// removeStaleTemps removes the temporary files a write of path left when
// the process was killed.
func removeStaleTemps(path string) {
	old, _ := filepath.Glob(filepath.Join(filepath.Dir(path), escapeGlob(filepath.Base(path))+".tmp*"))
	for _, f := range old {
		os.Remove(f)
	}
}

func escapeGlob(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)
	return r.Replace(s)
}

// keepWarm writes the answers being served, warmDelay after the last
// change, one write at a time; it returns when ctx ends.
func (s *Server) keepWarm(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.warmDirty:
		}
		timer := time.NewTimer(warmDelay)
	wait:
		for {
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-s.warmDirty:
				timer.Reset(warmDelay)
			case <-timer.C:
				break wait
			}
		}
		s.writeWarmNow()
	}
}

// writeWarmNow writes the snapshot being served, if it is one read from
// the config, with the sum of that config.
func (s *Server) writeWarmNow() {
	s.reloadMu.Lock()
	s.completeLocked()
	snap, sum, write := s.snap.Load(), s.servedSum, s.writeWarm
	s.reloadMu.Unlock()
	if snap == nil || snap.warm != nil || sum == ([sha256.Size]byte{}) {
		return
	}
	start := time.Now()
	path := s.warmPath()
	if err := write(path, snap, sum); err != nil {
		s.metrics.warmWriteErrors.Inc()
		s.log.Warn("cannot keep the answers for a warm start; the next start reads the config", "file", path, "err", err)
		return
	}
	s.reloadMu.Lock()
	s.keptSum = sum
	s.reloadMu.Unlock()
	s.log.Info("answers kept for a warm start", "file", path, "version", snap.version, "took", time.Since(start).Round(time.Millisecond))
}
