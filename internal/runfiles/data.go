package runfiles

import "github.com/apache/arrow/go/v17/arrow"

// DocsSchema is the schema of data/docs.arrow: one row per document kept
// by `memo data build`, its text and where it went (split, repetitions).
var DocsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "doc_id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "source", Type: arrow.BinaryTypes.String},
	{Name: "title", Type: arrow.BinaryTypes.String},
	{Name: "text", Type: arrow.BinaryTypes.String},
	{Name: "n_tokens", Type: arrow.PrimitiveTypes.Int32},
	{Name: "split", Type: arrow.BinaryTypes.String},
	{Name: "repetitions", Type: arrow.PrimitiveTypes.Int32},
}, nil)

// TokensSchema is the schema of data/tokens.arrow: each document's token
// ids, in docs.arrow's order.
var TokensSchema = arrow.NewSchema([]arrow.Field{
	{Name: "doc_id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "ids", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)},
}, nil)
