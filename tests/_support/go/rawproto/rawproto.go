// Package rawproto is what the Go peers of the tests and benchmarks need to
// speak the Pods API without generated code: a gRPC codec that passes
// message bytes through, a reader of length-delimited protobuf fields, and
// the GetPodRequest encoding. The programs import it by relative path
// (GOPATH mode, outside any workspace).
package rawproto

import "fmt"

// Codec passes []byte messages through unchanged; it registers as "proto"
// so that clients and servers of the real services accept it.
type Codec struct{}

// Marshal returns the bytes it is given ([]byte or *[]byte).
func (Codec) Marshal(v interface{}) ([]byte, error) {
	switch t := v.(type) {
	case []byte:
		return t, nil
	case *[]byte:
		return *t, nil
	}
	return nil, fmt.Errorf("rawproto.Codec cannot marshal %T", v)
}

// Unmarshal copies data into the *[]byte it is given.
func (Codec) Unmarshal(data []byte, v interface{}) error {
	p, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("rawproto.Codec cannot unmarshal into %T", v)
	}
	*p = append((*p)[:0], data...)
	return nil
}

// Name is the content-subtype the codec stands for.
func (Codec) Name() string { return "proto" }

// String is Name, for APIs that take the older codec interface.
func (Codec) String() string { return "proto" }

// Varint reads a base-128 varint at b[i:].
func Varint(b []byte, i int) (uint64, int, bool) {
	var v uint64
	for shift := uint(0); i < len(b) && shift < 64; shift += 7 {
		c := b[i]
		i++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, i, true
		}
	}
	return 0, i, false
}

// Field returns the first length-delimited field num of a message, or nil.
func Field(b []byte, num uint64) []byte {
	for i := 0; i < len(b); {
		tag, j, ok := Varint(b, i)
		if !ok {
			return nil
		}
		i = j
		switch tag & 7 {
		case 0:
			if _, i, ok = Varint(b, i); !ok {
				return nil
			}
		case 2:
			n, j, ok := Varint(b, i)
			if !ok || j+int(n) > len(b) {
				return nil
			}
			if tag>>3 == num {
				return b[j : j+int(n)]
			}
			i = j + int(n)
		default:
			return nil
		}
	}
	return nil
}

// CountField counts the length-delimited fields num of a message whose
// fields are all length-delimited (a ListPodsResponse).
func CountField(b []byte, num uint64) int {
	n := 0
	for i := 0; i < len(b); {
		tag, j, ok := Varint(b, i)
		if !ok || tag&7 != 2 {
			return n
		}
		l, j, ok := Varint(b, j)
		if !ok {
			return n
		}
		if tag>>3 == num {
			n++
		}
		i = j + int(l)
	}
	return n
}

// GetRequest encodes GetPodRequest{podUID: uid}.
func GetRequest(uid string) []byte {
	out := []byte{0x0a}
	n := len(uid)
	for n >= 0x80 {
		out = append(out, byte(n&0x7f|0x80))
		n >>= 7
	}
	return append(append(out, byte(n)), uid...)
}
