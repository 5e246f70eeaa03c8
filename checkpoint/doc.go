// Package checkpoint is memo's checkpoint format: the layout of a run's
// checkpoints/ directory, its files, writing one atomically, checking one
// by its digests, finding the newest good one, and loading the model it
// holds. train writes checkpoints through it; extract, the CLI and anything
// else that reads a model read them through it. It also imports and exports
// Hugging Face model directories (hf.go): config.json + safetensors, single
// or sharded, stored as F32, BF16 or F16.
//
// Layout, under RUN/checkpoints/:
//
//	step-NNNNNN/model.safetensors      weights, Hugging Face names of the architecture, F32
//	step-NNNNNN/optimizer.safetensors  AdamW moments: <name>.exp_avg, <name>.exp_avg_sq
//	step-NNNNNN/model.json             the architecture's Hugging Face config.json + "memo": memo's model config
//	step-NNNNNN/state.json             step, data position, seeds, sha256 of the three files
//	latest                             name of the newest complete checkpoint
//
// A checkpoint is written into a temporary directory (.tmp-step-NNNNNN-*)
// and renamed into place, so a kill at any moment leaves either the whole
// checkpoint or none; RemoveStaleTemps deletes what a kill leaves behind.
//
// Tensor names in model.safetensors are Hugging Face Llama's for memo's own
// models (and imported Llama-layout ones; q = heads·head_dim, kv =
// kv_heads·head_dim, each projection with a .bias when model.bias):
//
//	model.embed_tokens.weight                        [vocab, dim]
//	model.layers.N.input_layernorm.weight            [dim]
//	model.layers.N.self_attn.q_proj.weight           [q, dim]   (out, in), as torch.nn.Linear
//	model.layers.N.self_attn.k_proj.weight           [kv, dim]
//	model.layers.N.self_attn.v_proj.weight           [kv, dim]
//	model.layers.N.self_attn.o_proj.weight           [dim, q]
//	model.layers.N.post_attention_layernorm.weight   [dim]
//	model.layers.N.mlp.gate_proj.weight              [ffn, dim]
//	model.layers.N.mlp.up_proj.weight                [ffn, dim]
//	model.layers.N.mlp.down_proj.weight              [dim, ffn]
//	model.norm.weight                                [dim]
//	lm_head.weight                                   [vocab, dim]  only when untied
//
// An imported GPT-NeoX model keeps GPT-NeoX's names (gpt_neox.embed_in,
// gpt_neox.layers.N.{input_layernorm, post_attention_layernorm,
// attention.query_key_value, attention.dense, mlp.dense_h_to_4h,
// mlp.dense_4h_to_h}.{weight,bias}, gpt_neox.final_layer_norm, embed_out).
//
// Rotary embeddings use the rotate-half layout Hugging Face's Llama uses, so
// q_proj and k_proj need no permutation. With a tied head there is no
// lm_head.weight and model.json says tie_word_embeddings = true.
// optimizer.safetensors holds <name>.exp_avg and <name>.exp_avg_sq for each
// name above; state.json holds the step (AdamW's bias correction uses it).
// The safetensors files are read and written by internal/safetensors, one
// tensor at a time.
package checkpoint
