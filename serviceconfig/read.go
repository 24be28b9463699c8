package serviceconfig

// Reading a choice list from the forms a record comes in (a text of any
// kind, TXT records), keeping where each byte came from so that
// diagnostics point into what the user wrote.

import (
	"bytes"
	"strings"
)

// choicesFromText reads a choice list from an input text of any kind but
// a publisher config; a bare service config becomes one catch-all choice.
// It validates the structure (as a client does), not the service configs.
// Its diagnostics, and those of [Choices.Validate] on the result, locate
// their problems in text: Line and Column, and paths relative to the
// document the user wrote (a bare service config's, not the wrapping
// choice list's).
func choicesFromText(text []byte) (*Choices, Diagnostics) {
	src := &source{text: text}
	var value []byte
	k := DetectKind(text)
	if k != KindPublisher && len(text) > MaxRecordText {
		ds := Diagnostics{recordTooLarge(len(text), "of text")}
		locate(ds, text)
		return nil, ds
	}
	switch k {
	case KindChoices:
		value = text
	case KindServiceConfig:
		value = wrapConfig(text)
		lead := firstSignificant(text)
		src.wrapped = true
		src.offs = func(o int) int { return max(o-len(wrapPrefix), 0) + lead }
	case KindTXT:
		recs, p, bad := textRecords(text)
		if bad != nil {
			ds := Diagnostics{*bad}
			locate(ds, text)
			return nil, ds
		}
		v, err := DecodeTXT(recs)
		found, rv, offs := recordValue(recs, p)
		if err != nil {
			ch, ds := choicesFromRecords(recs)
			src.offs = offs
			src.place(ds, recordOffset(p, max(found, 0), firstSignificant(text)))
			return ch, ds
		}
		value, src.offs = v, offs
		if p == nil {
			// The raw form: the attribute and the value, as one string.
			start := firstSignificant(text) + len(recs[0][0]) - len(rv)
			src.offs = func(o int) int { return start + o }
		}
	case KindPublisher:
		return nil, Diagnostics{{Severity: codeChoicesType.severity(), Code: codeChoicesType.String(), Offset: -1,
			Message: "this is a publisher config, which holds many records: pick one with a dns:// input against the running server, or `encode` a service's choices"}}
	default:
		ds := Diagnostics{unknownKind(text)}
		locate(ds, text)
		return nil, ds
	}
	ch, err := ParseChoices(value)
	if err != nil {
		ds := err.(*InvalidError).Diagnostics
		src.place(ds, firstSignificant(text))
		return nil, ds
	}
	ch.src = src
	ch.place = func(ds Diagnostics) { src.place(ds, firstSignificant(text)) }
	return ch, nil
}

// source is the text a choice list was read from, for placing
// diagnostics in it.
type source struct {
	text []byte
	// offs maps offsets in the parsed value to offsets in text (nil: the
	// same).
	offs offsetMap
	// wrapped is set for a bare service config, parsed as the one choice
	// of a list.
	wrapped bool
}

// place maps diagnostics of the parsed value into the source text; those
// about the whole value go to whole (an offset in text).
func (s *source) place(ds Diagnostics, whole int) {
	for i := range ds {
		d := &ds[i]
		if s.wrapped {
			if rest, ok := strings.CutPrefix(d.Path, "/0/serviceConfig"); ok {
				d.Path = rest
			}
		}
		switch {
		case d.Code == omittedCode:
		case d.Offset < 0:
			d.Offset = whole
		case s.offs != nil:
			d.Offset = s.offs(d.Offset)
		}
	}
	locate(ds, s.text)
}

// recordValue finds the record holding the config (pickRecord) and
// returns its index, the value after the attribute, and, when p is known,
// where each of its bytes is in the text.
func recordValue(records [][]string, p *presentation) (found int, value string, offs offsetMap) {
	pick := pickRecord(records)
	if pick.found < 0 {
		return -1, "", nil
	}
	v, at := recordBytes(records[pick.found], pick.found, pick.skip, p)
	if p != nil {
		end := p.recordOff[pick.found]
		if len(at) > 0 {
			end = at[len(at)-1] + 1
		}
		offs = func(o int) int {
			if o < len(at) {
				return at[o]
			}
			return end
		}
	}
	return pick.found, string(v), offs
}

// recordOffset is where record r starts in the text, or def.
func recordOffset(p *presentation, r, def int) int {
	if p == nil || r >= len(p.recordOff) {
		return def
	}
	return p.recordOff[r]
}

// choicesFromRecords decodes the TXT records at a name and parses their
// choice list. It returns ErrNoConfig's diagnostic when there is none.
func choicesFromRecords(records [][]string) (*Choices, Diagnostics) {
	value, err := DecodeTXT(records)
	if err == ErrNoConfig {
		return nil, Diagnostics{{Severity: codeTXTNoRecord.severity(), Code: codeTXTNoRecord.String(), Offset: -1, Message: noRecordMessage(records)}}
	}
	if err != nil {
		return nil, err.(*InvalidError).Diagnostics
	}
	ch, err := ParseChoices(value)
	if err != nil {
		return nil, err.(*InvalidError).Diagnostics
	}
	return ch, nil
}

const wrapPrefix = `[{"serviceConfig":`

func wrapConfig(cfg []byte) []byte {
	return append(append([]byte(wrapPrefix), bytes.TrimSpace(cfg)...), "}]"...)
}
