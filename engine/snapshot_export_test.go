package engine

import (
	"encoding/binary"
	"encoding/json"
)

// JSONSnapshot returns h's snapshot in the JSON format (version 2) that
// earlier releases' Snapshot wrote, built from h's fields: what a binary
// snapshot must carry, and a JSON snapshot Restore must still read.
func JSONSnapshot(h *Handler) ([]byte, error) {
	sn := h.snapshotHeader()
	sn.Version = jsonSnapshotVersion
	for i := range h.sessions {
		sn.Sessions = append(sn.Sessions, h.sessionSnapshot(i, nil))
	}
	sn.Held = h.heldSnapshots()
	return json.Marshal(sn)
}

// BinarySnapshot returns a snapshot of either format in the binary
// format, as Snapshot writes a handler of that state: tests edit
// snapshots as JSON and restore the edits in both formats.
func BinarySnapshot(data []byte) ([]byte, error) {
	sn, err := decodeSnapshot(data, nil)
	if err != nil {
		return nil, err
	}
	b := appendHeader(nil, sn)
	b = binary.AppendUvarint(b, uint64(len(sn.Sessions)))
	for i := range sn.Sessions {
		if b, err = appendSession(b, &sn.Sessions[i]); err != nil {
			return nil, err
		}
	}
	return appendHelds(b, sn.Held)
}

// SessionContent returns the content session i of h holds.
func SessionContent(h *Handler, i int) map[string]any { return h.sessions[i].content }
