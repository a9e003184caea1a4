package physics

import "math/bits"

// bitWriter appends a big-endian (most significant bit first) bit stream to
// a byte slice. It keeps up to 63 pending bits in acc.
type bitWriter struct {
	buf  []byte
	acc  uint64
	nacc uint // bits in acc
}

// write appends the low n bits of v (n ≤ 56).
func (w *bitWriter) write(v uint64, n uint) {
	if n == 0 {
		return
	}
	w.acc = w.acc<<n | (v & (1<<n - 1))
	w.nacc += n
	for w.nacc >= 8 {
		w.nacc -= 8
		w.buf = append(w.buf, byte(w.acc>>w.nacc))
	}
	w.acc &= 1<<w.nacc - 1
}

// writeUE appends u in Exp-Golomb code of order k: EG0(u>>k) followed by the
// k low bits of u. EG0(x) is bitlen(x+1)-1 zero bits, then x+1 in binary.
// u must be < 2^maxEGBits.
func (w *bitWriter) writeUE(u uint64, k uint) {
	x := u>>k + 1
	n := uint(bits.Len64(x))
	w.write(0, n-1)
	if n > 32 {
		w.write(x>>32, n-32)
		w.write(x, 32)
	} else {
		w.write(x, n)
	}
	w.write(u, k)
}

// writeSE appends the signed value s as writeUE of its zigzag form
// (0, 1, -1, 2, -2 ... → 0, 1, 2, 3, 4 ...).
func (w *bitWriter) writeSE(s int64, k uint) { w.writeUE(zigzag(s), k) }

// flush pads the last byte with zero bits and returns the buffer.
func (w *bitWriter) flush() []byte {
	if w.nacc > 0 {
		w.buf = append(w.buf, byte(w.acc<<(8-w.nacc)))
		w.acc, w.nacc = 0, 0
	}
	return w.buf
}

func zigzag(s int64) uint64 {
	if s > 0 {
		return uint64(s)*2 - 1
	}
	return uint64(-s) * 2
}

func unzigzag(u uint64) int64 {
	if u&1 == 1 {
		return int64(u>>1) + 1
	}
	return -int64(u >> 1)
}

// maxEGBits bounds Exp-Golomb values: longer prefixes are rejected, so a
// decoder never reads absurd lengths.
const maxEGBits = 40

// bitReader reads a bit stream written by bitWriter. Reading past the end
// sets short and returns zeros; callers check short after a group of reads.
type bitReader struct {
	buf   []byte
	pos   uint // next bit
	short bool // read past the end
	long  bool // an Exp-Golomb prefix exceeded maxEGBits
}

func (r *bitReader) read(n uint) uint64 {
	var v uint64
	for n > 0 {
		byteIdx := r.pos >> 3
		if int(byteIdx) >= len(r.buf) {
			r.short = true
			return 0
		}
		off := r.pos & 7
		avail := 8 - off
		take := min(avail, n)
		b := uint64(r.buf[byteIdx]>>(avail-take)) & (1<<take - 1)
		v = v<<take | b
		r.pos += take
		n -= take
	}
	return v
}

func (r *bitReader) readUE(k uint) uint64 {
	zeros := uint(0)
	for {
		if r.short {
			return 0
		}
		if r.read(1) == 1 {
			break
		}
		zeros++
		if zeros > maxEGBits {
			r.long = true
			return 0
		}
	}
	x := uint64(1)<<zeros | r.read(zeros)
	return (x-1)<<k | r.read(k)
}

func (r *bitReader) readSE(k uint) int64 { return unzigzag(r.readUE(k)) }

// bytePos returns the index of the byte holding the next bit.
func (r *bitReader) bytePos() int { return int(r.pos >> 3) }
