package serviceconfig

import (
	"fmt"
	"strconv"
	"time"
)

// maxDurationSeconds is the range of google.protobuf.Duration.
const maxDurationSeconds = 315_576_000_000

// parseDuration parses a google.protobuf.Duration in its proto3 JSON form:
// an optional sign, decimal seconds with at most 9 fraction digits, and an
// 's' ("1s", "0.25s", "-1.000000001s"). The mapping also accepts a missing
// integer part (".5s"), a bare point ("1.s") and a '+' sign, as Go's
// protojson does; lint warns about them because some clients do not.
// Values beyond the range of time.Duration saturate, as gRPC clients do.
func parseDuration(s string) (time.Duration, error) {
	sec, nanos, _, err := parseDurationParts(s)
	if err != nil {
		return 0, err
	}
	const maxSec = (1<<63 - 1) / int64(time.Second)
	neg := sec < 0 || nanos < 0
	if sec > maxSec || sec < -maxSec {
		if neg {
			return -1 << 63, nil
		}
		return 1<<63 - 1, nil
	}
	return time.Duration(sec)*time.Second + time.Duration(nanos), nil
}

// durationForm says which of the unusual spellings proto3 JSON allows a
// duration has.
type durationForm uint8

const (
	formNoInteger durationForm = 1 << iota // ".5s"
	formBarePoint                          // "1.s"
	formPlus                               // "+1s"
)

// parseDurationParts returns seconds and nanoseconds, both with the sign,
// and the unusual spellings the text uses.
func parseDurationParts(s string) (sec, nanos int64, form durationForm, err error) {
	orig := s
	if len(s) == 0 || s[len(s)-1] != 's' || (len(s) > 1 && (s[len(s)-2] < '0' || s[len(s)-2] > '9') && s[len(s)-2] != '.') {
		if d, err := time.ParseDuration(s); err == nil {
			return 0, 0, 0, fmt.Errorf("%q is not a duration: durations are seconds with an \"s\" suffix; write %q", orig, formatDuration(d))
		}
		return 0, 0, 0, fmt.Errorf("%q is not a duration: write seconds with an \"s\" suffix, like \"1.5s\"", orig)
	}
	s = s[:len(s)-1]
	neg := false
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		if !neg {
			form |= formPlus
		}
		s = s[1:]
	}
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		if sec > maxDurationSeconds {
			break
		}
		sec = sec*10 + int64(s[i]-'0')
		i++
	}
	intDigits := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++ // digits beyond the range; reported below
		intDigits = i
	}
	if sec > maxDurationSeconds {
		return 0, 0, 0, fmt.Errorf("duration %q is out of range: at most %d seconds", orig, int64(maxDurationSeconds))
	}
	fracDigits := 0
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			if fracDigits < 9 {
				nanos = nanos*10 + int64(s[i]-'0')
			}
			fracDigits++
			i++
		}
		if fracDigits > 9 {
			return 0, 0, 0, fmt.Errorf("duration %q has %d fraction digits: at most 9 (nanoseconds) are allowed", orig, fracDigits)
		}
		if fracDigits == 0 {
			form |= formBarePoint
		}
		for d := fracDigits; d < 9; d++ {
			nanos *= 10
		}
	}
	if intDigits == 0 {
		if fracDigits == 0 {
			return 0, 0, 0, fmt.Errorf("%q is not a duration: it needs digits before the \"s\", like \"0.5s\"", orig)
		}
		form |= formNoInteger
	}
	if i != len(s) {
		return 0, 0, 0, fmt.Errorf("%q is not a duration: write seconds with an \"s\" suffix, like \"1.5s\" (no other units)", orig)
	}
	if neg {
		sec, nanos = -sec, -nanos
	}
	return sec, nanos, form, nil
}

// formatDuration writes d in the JSON form of google.protobuf.Duration
// with exactly 9 fraction digits when it has any fraction, the form every
// gRPC client reads correctly (grpc-js misreads shorter fractions).
func formatDuration(d time.Duration) string {
	var b [32]byte
	return string(appendDuration(b[:0], d))
}

// appendDuration appends formatDuration(d) to dst. It is on the path of
// every duration a publisher rewrites to nine digits: fmt cost a tenth of
// publishing a typical service config.
func appendDuration(dst []byte, d time.Duration) []byte {
	u := uint64(d)
	if d < 0 {
		dst = append(dst, '-')
		u = -u
	}
	dst = strconv.AppendUint(dst, u/1e9, 10)
	if ns := u % 1e9; ns != 0 {
		var frac [10]byte
		frac[0] = '.'
		for i := 9; i > 0; i-- {
			frac[i] = byte('0' + ns%10)
			ns /= 10
		}
		dst = append(dst, frac[:]...)
	}
	return append(dst, 's')
}
