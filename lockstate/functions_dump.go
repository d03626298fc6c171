package lockstate

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
)

// FUNCTION DUMP's payload. Redis's is RDB (opcodes, its RDB version and a
// CRC64); fenced's is its own, which RESTORE reads as untrusted input:
//
//	"FNCD" dumpVersion uvarint(n) n × (uvarint(len) code) crc32c(LE, of all before)
//
// Only the codes travel: RESTORE loads each again, as FUNCTION LOAD does,
// so what a payload claims about its functions need not be trusted.
const (
	dumpMagic   = "FNCD"
	dumpVersion = 1
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// dumpLibraries is the payload of every library, in name order.
func (s *State) dumpLibraries() []byte {
	b := append([]byte(dumpMagic), dumpVersion)
	names := sortedKeys(s.libs)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, name := range names {
		code := s.libs[name].code
		b = binary.AppendUvarint(b, uint64(len(code)))
		b = append(b, code...)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

var errDump = errors.New("bad function payload")

// decodeLibraries checks a payload whole (magic, version, checksum, every
// length within the bytes, nothing after the last code) and answers the
// codes it carries.
func decodeLibraries(p []byte) ([]string, error) {
	if len(p) < len(dumpMagic)+1+1+4 || string(p[:len(dumpMagic)]) != dumpMagic || p[len(dumpMagic)] != dumpVersion {
		return nil, errDump
	}
	body, sum := p[:len(p)-4], binary.LittleEndian.Uint32(p[len(p)-4:])
	if crc32.Checksum(body, crcTable) != sum {
		return nil, errDump
	}
	rest := body[len(dumpMagic)+1:]
	n, k := binary.Uvarint(rest)
	if k <= 0 || n > uint64(len(rest)) { // each code takes a byte at least
		return nil, errDump
	}
	rest = rest[k:]
	codes := make([]string, 0, n)
	for i := uint64(0); i < n; i++ {
		l, k := binary.Uvarint(rest)
		if k <= 0 || l > uint64(len(rest)-k) {
			return nil, errDump
		}
		codes = append(codes, string(rest[k:k+int(l)]))
		rest = rest[k+int(l):]
	}
	if len(rest) != 0 {
		return nil, errDump
	}
	return codes, nil
}
