//go:build !js

package websocket

import "github.com/coder/websocket"

type (
	Conn        = websocket.Conn
	DialOptions = websocket.DialOptions
	MessageType = websocket.MessageType
	StatusCode  = websocket.StatusCode
	CloseError  = websocket.CloseError
)

const (
	MessageText   = websocket.MessageText
	MessageBinary = websocket.MessageBinary

	StatusNormalClosure = websocket.StatusNormalClosure
	StatusGoingAway     = websocket.StatusGoingAway
	StatusProtocolError = websocket.StatusProtocolError

	CompressionDisabled = websocket.CompressionDisabled
)

var (
	Dial        = websocket.Dial
	CloseStatus = websocket.CloseStatus
	NetConn     = websocket.NetConn
)
