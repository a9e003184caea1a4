//go:build linux

package main

import (
	"encoding/binary"
	"fmt"
)

// The nfnetlink_queue wire format, as this program speaks it (see the
// kernel's include/uapi/linux/netfilter/nfnetlink_queue.h and
// nfnetlink.h; golang.org/x/sys/unix has the netlink constants but not
// the queue's).
//
// Every message, either way, on a NETLINK_NETFILTER socket:
//
//	nlmsghdr, 16 bytes, host byte order:
//	  u32 len    the whole message, this header included
//	  u16 type   NFNL_SUBSYS_QUEUE<<8 | NFQNL_MSG_* (or NLMSG_ERROR = 2)
//	  u16 flags  NLM_F_REQUEST [| NLM_F_ACK] on what we send
//	  u32 seq    ours, echoed in the kernel's ack
//	  u32 pid    0: the kernel
//	nfgenmsg, 4 bytes:
//	  u8   family  AF_UNSPEC
//	  u8   version NFNETLINK_V0
//	  be16 res_id  the queue number
//	attributes, each padded to 4 bytes:
//	  u16 len   header and value, padding excluded
//	  u16 type  (the top two bits are flags: masked off when reading)
//	  value
//
// Messages one datagram carries follow each other, each padded to 4 bytes.
// The kernel handles every message of a datagram we send, so the verdicts
// due at one instant go out in one sendto.
//
// Attribute values (the structs are packed, integers big-endian):
//
//	NFQNL_MSG_CONFIG (we send):
//	  NFQA_CFG_CMD          {u8 command; u8 pad; be16 pf}: BIND the queue
//	  NFQA_CFG_PARAMS       {be32 copy_range; u8 copy_mode}: COPY_PACKET,
//	                        the first copy_range bytes of each packet
//	  NFQA_CFG_QUEUE_MAXLEN be32: packets the kernel queues for us
//	  NFQA_CFG_MASK, _FLAGS be32 each: FAIL_OPEN, accept rather than drop
//	                        when that queue is full or our socket is
//	NFQNL_MSG_PACKET (the kernel sends, one per queued packet):
//	  NFQA_PACKET_HDR       {be32 packet_id; be16 hw_protocol; u8 hook}
//	  NFQA_PAYLOAD          the packet from its IP header on, cut at
//	                        copy_range
//	  (and others we skip: mark, timestamp, interfaces, cap_len, ...)
//	NFQNL_MSG_VERDICT (we send):
//	  NFQA_VERDICT_HDR      {be32 verdict; be32 packet_id}: NF_ACCEPT
//	NLMSG_ERROR (the kernel sends: an ack, or a failed request):
//	  i32 error (0 or a negative errno), then the request's nlmsghdr
const (
	nfnlSubsysQueue = 3 // NFNL_SUBSYS_QUEUE

	nfqnlMsgPacket  = 0 // NFQNL_MSG_PACKET
	nfqnlMsgVerdict = 1 // NFQNL_MSG_VERDICT
	nfqnlMsgConfig  = 2 // NFQNL_MSG_CONFIG

	nfqaPacketHdr  = 1  // NFQA_PACKET_HDR
	nfqaVerdictHdr = 2  // NFQA_VERDICT_HDR
	nfqaPayload    = 10 // NFQA_PAYLOAD

	nfqaCfgCmd         = 1 // NFQA_CFG_CMD
	nfqaCfgParams      = 2 // NFQA_CFG_PARAMS
	nfqaCfgQueueMaxlen = 3 // NFQA_CFG_QUEUE_MAXLEN
	nfqaCfgMask        = 4 // NFQA_CFG_MASK
	nfqaCfgFlags       = 5 // NFQA_CFG_FLAGS

	nfqnlCfgCmdBind   = 1 // NFQNL_CFG_CMD_BIND
	nfqnlCfgCmdUnbind = 2 // NFQNL_CFG_CMD_UNBIND

	nfqnlCopyPacket = 2 // NFQNL_COPY_PACKET

	nfqaCfgFFailOpen = 1 // NFQA_CFG_F_FAIL_OPEN

	nfAccept = 1 // NF_ACCEPT

	nlmsgError    = 2      // NLMSG_ERROR
	nlmFRequest   = 1      // NLM_F_REQUEST
	nlmFAck       = 4      // NLM_F_ACK
	nlaTypeMask   = 0x3fff // ^(NLA_F_NESTED | NLA_F_NET_BYTEORDER)
	nlmsgHdrLen   = 16
	nfgenmsgLen   = 4
	nlattrHdrLen  = 4
	verdictMsgLen = nlmsgHdrLen + nfgenmsgLen + nlattrHdrLen + 8
)

// align4 rounds n up to a multiple of 4 (NLMSG_ALIGN, NLA_ALIGN).
func align4(n int) int { return (n + 3) &^ 3 }

// appendHeader appends an nlmsghdr and nfgenmsg of type
// NFNL_SUBSYS_QUEUE<<8|msg for queue; the length is set by finishMsg.
func appendHeader(b []byte, msg uint16, flags uint16, seq uint32, queue uint16) []byte {
	b = binary.NativeEndian.AppendUint32(b, 0)
	b = binary.NativeEndian.AppendUint16(b, nfnlSubsysQueue<<8|msg)
	b = binary.NativeEndian.AppendUint16(b, flags)
	b = binary.NativeEndian.AppendUint32(b, seq)
	b = binary.NativeEndian.AppendUint32(b, 0)
	b = append(b, 0, 0) // AF_UNSPEC, NFNETLINK_V0
	return binary.BigEndian.AppendUint16(b, queue)
}

// appendAttr appends one attribute and its padding.
func appendAttr(b []byte, typ uint16, val []byte) []byte {
	b = binary.NativeEndian.AppendUint16(b, uint16(nlattrHdrLen+len(val)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = append(b, val...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// finishMsg writes the length of the message that starts at start.
func finishMsg(b []byte, start int) []byte {
	binary.NativeEndian.PutUint32(b[start:], uint32(len(b)-start))
	return b
}

// appendVerdict appends an NF_ACCEPT verdict for packet id of queue.
func appendVerdict(b []byte, queue uint16, id uint32) []byte {
	start := len(b)
	b = appendHeader(b, nfqnlMsgVerdict, nlmFRequest, 0, queue)
	var v [8]byte
	binary.BigEndian.PutUint32(v[0:], nfAccept)
	binary.BigEndian.PutUint32(v[4:], id)
	b = appendAttr(b, nfqaVerdictHdr, v[:])
	return finishMsg(b, start)
}

// appendConfigCmd appends a config message carrying one command.
func appendConfigCmd(b []byte, seq uint32, queue uint16, cmd uint8) []byte {
	start := len(b)
	b = appendHeader(b, nfqnlMsgConfig, nlmFRequest|nlmFAck, seq, queue)
	b = appendAttr(b, nfqaCfgCmd, []byte{cmd, 0, 0, 0})
	return finishMsg(b, start)
}

// appendConfigParams appends a config message setting the copy mode
// (COPY_PACKET, copyRange bytes), the kernel's queue length and
// FAIL_OPEN.
func appendConfigParams(b []byte, seq uint32, queue uint16, copyRange, maxlen uint32) []byte {
	start := len(b)
	b = appendHeader(b, nfqnlMsgConfig, nlmFRequest|nlmFAck, seq, queue)
	var p [5]byte
	binary.BigEndian.PutUint32(p[:], copyRange)
	p[4] = nfqnlCopyPacket
	b = appendAttr(b, nfqaCfgParams, p[:])
	b = appendAttr(b, nfqaCfgQueueMaxlen, binary.BigEndian.AppendUint32(nil, maxlen))
	b = appendAttr(b, nfqaCfgMask, binary.BigEndian.AppendUint32(nil, nfqaCfgFFailOpen))
	b = appendAttr(b, nfqaCfgFlags, binary.BigEndian.AppendUint32(nil, nfqaCfgFFailOpen))
	return finishMsg(b, start)
}

// message is one netlink message of a datagram the kernel sent.
type message struct {
	typ  uint16
	seq  uint32
	body []byte // after the nlmsghdr
}

// WireError is a datagram from the kernel this program cannot read.
type WireError struct {
	What string
	Data []byte // the offending bytes (at most 64)
}

func (e *WireError) Error() string {
	d := e.Data
	if len(d) > 64 {
		d = d[:64]
	}
	return fmt.Sprintf("nfqdelay: malformed netlink %s: % x", e.What, d)
}

// nextMessage splits the first message off a datagram; rest is empty
// after the last.
func nextMessage(b []byte) (m message, rest []byte, err error) {
	if len(b) < nlmsgHdrLen {
		return m, nil, &WireError{"message header", b}
	}
	n := int(binary.NativeEndian.Uint32(b))
	if n < nlmsgHdrLen || n > len(b) {
		return m, nil, &WireError{"message length", b}
	}
	m.typ = binary.NativeEndian.Uint16(b[4:])
	m.seq = binary.NativeEndian.Uint32(b[8:])
	m.body = b[nlmsgHdrLen:n]
	if a := align4(n); a < len(b) {
		rest = b[a:]
	}
	return m, rest, nil
}

// errorCode reads an NLMSG_ERROR body: 0 for an ack, else a negative
// errno.
func errorCode(body []byte) (int32, error) {
	if len(body) < 4 {
		return 0, &WireError{"error message", body}
	}
	return int32(binary.NativeEndian.Uint32(body)), nil
}

// packet is what this program needs of an NFQNL_MSG_PACKET.
type packet struct {
	id      uint32
	payload []byte // nil when the kernel sent none
}

// parsePacket reads the body (after the nlmsghdr) of an NFQNL_MSG_PACKET.
func parsePacket(body []byte) (packet, error) {
	var p packet
	if len(body) < nfgenmsgLen {
		return p, &WireError{"packet message", body}
	}
	a := body[nfgenmsgLen:]
	haveID := false
	for len(a) >= nlattrHdrLen {
		n := int(binary.NativeEndian.Uint16(a))
		typ := binary.NativeEndian.Uint16(a[2:]) & nlaTypeMask
		if n < nlattrHdrLen || n > len(a) {
			return p, &WireError{"attribute length", a}
		}
		val := a[nlattrHdrLen:n]
		switch typ {
		case nfqaPacketHdr:
			if len(val) < 4 {
				return p, &WireError{"packet header attribute", val}
			}
			p.id = binary.BigEndian.Uint32(val)
			haveID = true
		case nfqaPayload:
			p.payload = val
		}
		if a2 := align4(n); a2 < len(a) {
			a = a[a2:]
		} else {
			a = nil
		}
	}
	if !haveID {
		return p, &WireError{"packet message without a packet id", body}
	}
	return p, nil
}

// flow identifies a packet's flow: protocol, addresses and, for TCP,
// UDP, UDP-Lite and SCTP, ports. A payload this program cannot read is
// the zero flow.
type flow struct {
	proto        uint8
	src, dst     [16]byte
	sport, dport uint16
}

// flowOf reads the flow of an IPv4 or IPv6 packet (extension headers are
// not followed: such packets are one flow per address pair).
func flowOf(p []byte) flow {
	var f flow
	if len(p) < 1 {
		return f
	}
	var l4 []byte
	switch p[0] >> 4 {
	case 4:
		if len(p) < 20 {
			return f
		}
		ihl := int(p[0]&0x0f) * 4
		f.proto = p[9]
		copy(f.src[:], p[12:16])
		copy(f.dst[:], p[16:20])
		fragOff := binary.BigEndian.Uint16(p[6:]) & 0x1fff
		if ihl >= 20 && ihl <= len(p) && fragOff == 0 {
			l4 = p[ihl:]
		}
	case 6:
		if len(p) < 40 {
			return f
		}
		f.proto = p[6]
		copy(f.src[:], p[8:24])
		copy(f.dst[:], p[24:40])
		l4 = p[40:]
	default:
		return f
	}
	switch f.proto {
	case 6, 17, 132, 136: // TCP, UDP, SCTP, UDP-Lite
		if len(l4) >= 4 {
			f.sport = binary.BigEndian.Uint16(l4)
			f.dport = binary.BigEndian.Uint16(l4[2:])
		}
	}
	return f
}
