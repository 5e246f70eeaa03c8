package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/internal/lossyutf8"
)

func tokenizeCommand() *cli.Command {
	return &cli.Command{
		Name:  "tokenize",
		Usage: "encode text from stdin to token ids, or decode ids to text",
		UsageText: "memo tokenize --tokenizer SPEC [--special] [--json] < text\n" +
			"memo tokenize --tokenizer SPEC --decode [--special] [--json] < ids.json",
		Description: "Encodes all of stdin, byte for byte, and prints {\"ids\": [...]}; --special adds\n" +
			"the tokens the tokenizer's post-processor adds (BOS, EOS), and --json adds the\n" +
			"vocabulary entries (\"tokens\"). With --decode, reads {\"ids\": [...]} and prints the text, leaving\n" +
			"out special tokens as Hugging Face's decode(skip_special_tokens=True) does (kept\n" +
			"with --special); --json prints {\"text\": ...}. SPEC: gpt2, hf:PATH (a\n" +
			"tokenizer.json or a model directory holding one) or a tokenizer.json memo saved.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "tokenizer", Usage: "tokenizer `SPEC`: gpt2, hf:PATH or a tokenizer.json path"},
			&cli.BoolFlag{Name: "special", Usage: "encode: add the post-processor's special tokens; decode: keep special tokens"},
			&cli.BoolFlag{Name: "decode", Usage: "read {\"ids\": [...]} and print the text"},
			&cli.BoolFlag{Name: "json", Usage: "encode: also print the tokens; decode: print {\"text\": ...}"},
		},
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return usageError("tokenize: %s", flagMessage("tokenize", c.Command.Flags, err))
		},
		Action: runTokenize,
	}
}

func runTokenize(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageError("tokenize: unexpected argument %q: the input comes on stdin", c.Args().First())
	}
	spec := c.String("tokenizer")
	if spec == "" {
		return usageError("tokenize: --tokenizer SPEC is required (gpt2, hf:PATH or a tokenizer.json path)")
	}
	tok, err := data.LoadTokenizer(spec)
	if err != nil {
		return usageError("tokenize: --tokenizer %s: %v", spec, err)
	}
	in, err := io.ReadAll(c.App.Reader)
	if err != nil {
		return fmt.Errorf("tokenize: read stdin: %w", err)
	}
	if c.Bool("decode") {
		return decodeIDs(c, tok, in)
	}
	return encodeText(c, tok, string(in))
}

func encodeText(c *cli.Context, tok *data.Tokenizer, text string) error {
	encode := tok.Encode
	if c.Bool("special") {
		encode = tok.EncodeSpecial
	}
	ids, err := encode(text)
	if err != nil {
		return fmt.Errorf("tokenize: %w", err)
	}
	out := struct {
		IDs    []int32  `json:"ids"`
		Tokens []string `json:"tokens,omitempty"`
	}{IDs: ids}
	if out.IDs == nil {
		out.IDs = []int32{}
	}
	if c.Bool("json") {
		out.Tokens = make([]string, len(ids))
		for i, id := range ids {
			out.Tokens[i] = tok.Token(id)
		}
	}
	return writeJSONLine(c, out)
}

func decodeIDs(c *cli.Context, tok *data.Tokenizer, in []byte) error {
	var req struct {
		IDs *[]int64 `json:"ids"`
	}
	dec := json.NewDecoder(bytes.NewReader(in))
	if err := dec.Decode(&req); err != nil {
		return usageError("tokenize --decode: stdin: want {\"ids\": [...]} of integer ids (found %s)", jsonProblem(err))
	}
	if dec.More() {
		return usageError("tokenize --decode: stdin: want one JSON object {\"ids\": [...]}, found more after it")
	}
	if req.IDs == nil {
		return usageError("tokenize --decode: stdin: no \"ids\" array")
	}
	ids := make([]int32, len(*req.IDs))
	for i, id := range *req.IDs {
		if id < 0 || id > 1<<31-1 || !tok.Known(int32(id)) {
			return usageError("tokenize --decode: ids[%d] = %d is not in the vocabulary of %s (%d ids)", i, id, c.String("tokenizer"), tok.VocabSize())
		}
		ids[i] = int32(id)
	}
	if !c.Bool("special") {
		kept := ids[:0]
		for _, id := range ids {
			if !tok.IsSpecial(id) {
				kept = append(kept, id)
			}
		}
		ids = kept
	}
	// As Hugging Face's decode prints it: ids cut inside a character give
	// one U+FFFD per broken sequence (JSON would have written one a byte).
	text := lossyutf8.String([]byte(tok.Decode(ids)))
	if c.Bool("json") {
		return writeJSONLine(c, struct {
			Text string `json:"text"`
		}{text})
	}
	_, err := io.WriteString(c.App.Writer, text)
	return err
}

// writeJSONLine prints v as one line of JSON, without HTML escaping, so
// that "<s>" reads as itself.
func writeJSONLine(c *cli.Context, v any) error {
	enc := json.NewEncoder(c.App.Writer)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
