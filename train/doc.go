package train

// Checkpoint tensor names (model.safetensors), Hugging Face Llama's, all F32:
//
//	model.embed_tokens.weight                        [vocab, dim]
//	model.layers.N.input_layernorm.weight            [dim]
//	model.layers.N.self_attn.q_proj.weight           [dim, dim]   (out, in), as torch.nn.Linear
//	model.layers.N.self_attn.k_proj.weight           [dim, dim]
//	model.layers.N.self_attn.v_proj.weight           [dim, dim]
//	model.layers.N.self_attn.o_proj.weight           [dim, dim]
//	model.layers.N.post_attention_layernorm.weight   [dim]
//	model.layers.N.mlp.gate_proj.weight              [ffn, dim]
//	model.layers.N.mlp.up_proj.weight                [ffn, dim]
//	model.layers.N.mlp.down_proj.weight              [dim, ffn]
//	model.norm.weight                                [dim]
//	lm_head.weight                                   [vocab, dim]  only when untied
//
// Rotary embeddings use the rotate-half layout Hugging Face's Llama uses, so
// q_proj and k_proj need no permutation. With a tied head there is no
// lm_head.weight and model.json says tie_word_embeddings = true.
// optimizer.safetensors holds <name>.exp_avg and <name>.exp_avg_sq for each
// name above; state.json holds the step (AdamW's bias correction uses it).
