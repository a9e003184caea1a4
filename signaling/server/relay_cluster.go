package server

// relayIn receives relay bytes from another node.
func (s *Server) relayIn(e *envelope) {}
