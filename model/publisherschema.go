package model

import _ "embed"

// PublisherSchema is the JSON Schema (draft 2020-12) of a publisher
// config, publisher.schema.json, whose $id is PublisherSchemaID: for
// editors, and the one place that describes each field of a zone, a
// service and a policy (grpc-config-dns explain reads it). Its service
// configs are described by serviceconfig/schema.ServiceConfig, which it
// names by $ref. The schema is the first word, not the last: Parse and
// the Validate functions check more than it says.
//
//go:embed publisher.schema.json
var PublisherSchema []byte

// PublisherSchemaID is the $id of PublisherSchema, where editors find it.
const PublisherSchemaID = "https://raw.githubusercontent.com/grpc-config-dns/grpc-config-dns/main/model/publisher.schema.json"
