package server

import (
	bbk "github.com/ragsync/ragsync/signaling/server/internal/backbone"
)

// The backbone of a cluster (package internal/backbone): what the cluster
// logic (cluster.go, cluster_route.go, relay_cluster.go) uses, the same
// over localBackbone (a single server's, in memory) and NATS (package
// natsclient, through NATSConfig.Connect).
type (
	backbone       = bbk.Backbone
	kvBucket       = bbk.Bucket
	kvEntry        = bbk.Entry
	busMsg         = bbk.Msg
	backboneStatus = bbk.Status
)

var (
	errKeyNotFound   = bbk.ErrKeyNotFound
	errKeyExists     = bbk.ErrKeyExists
	errWrongRevision = bbk.ErrWrongRevision
	errNoResponders  = bbk.ErrNoResponders
	errBusTimeout    = bbk.ErrBusTimeout
	errBusClosed     = bbk.ErrBusClosed
)
