//! The BERT encoder: configuration and weights read from `config.json` and
//! `model.safetensors`, and a forward pass that turns token ids into mean-pooled,
//! L2-normalised sentence vectors.
//!
//! The forward pass packs the sentences of a batch into one token matrix without padding.
//! Only self-attention mixes tokens, so every dense layer (the fused query/key/value
//! projection, the attention output, both feed-forward layers) runs as one large matrix
//! product over all tokens of the batch, and attention runs per sentence and head on its own
//! rows. Nothing is computed for padding and no attention mask is needed. Weights are stored
//! transposed (`in × out`) at load time, the attention scale `1/sqrt(head_dim)` is folded into
//! the query projection, biases and residuals are written into the output before the product
//! accumulates onto them.
//!
//! The same pass serves RoBERTa-family encoders (`xlm-roberta`): their only difference at
//! inference is that position ids start after the padding index, so the rows before it are
//! dropped at load time. Pooling is the mean of the token vectors or the first token's.
//!
//! It deliberately knows nothing about threads, batching policy or tokenisation (see
//! `local`), and supports only what BERT sentence encoders use: absolute position
//! embeddings, exact GELU, single-segment input (token type 0), f32 weights (with an int8
//! copy of the linear maps, made on first use, for integer products).

use std::sync::OnceLock;

use safetensors::{Dtype, SafeTensors};
use serde::Deserialize;

use crate::kernels::{self, QMatrix, View};

/// The parts of `config.json` the encoder needs.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct BertConfig {
    #[serde(default)]
    model_type: Option<String>,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    pub vocab_size: usize,
    #[serde(default = "default_type_vocab_size")]
    pub type_vocab_size: usize,
    #[serde(default = "default_layer_norm_eps")]
    pub layer_norm_eps: f64,
    #[serde(default = "default_hidden_act")]
    hidden_act: String,
    #[serde(default)]
    position_embedding_type: Option<String>,
    #[serde(default)]
    pad_token_id: Option<usize>,
}

/// How token vectors become one sentence vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pooling {
    /// The mean of all token vectors (sentence-transformers' `pooling_mode_mean_tokens`).
    Mean,
    /// The first token's vector (`pooling_mode_cls_token`).
    Cls,
}

fn default_type_vocab_size() -> usize {
    2
}
fn default_layer_norm_eps() -> f64 {
    1e-12
}
fn default_hidden_act() -> String {
    "gelu".to_owned()
}

impl BertConfig {
    /// Parses and checks `config.json`. The error is a human-readable reason.
    pub(crate) fn from_json(json: &[u8]) -> Result<Self, String> {
        let config: Self = serde_json::from_slice(json).map_err(|e| format!("config.json: {e}"))?;
        if let Some(kind) = &config.model_type
            && !matches!(kind.as_str(), "bert" | "xlm-roberta" | "roberta")
        {
            return Err(format!("config.json: model_type {kind} is not supported, only bert, roberta and xlm-roberta"));
        }
        if config.hidden_act != "gelu" {
            return Err(format!("config.json: hidden_act {} is not supported, only gelu", config.hidden_act));
        }
        if let Some(kind) = &config.position_embedding_type
            && kind != "absolute"
        {
            return Err(format!("config.json: position_embedding_type {kind} is not supported, only absolute"));
        }
        let dims = [
            config.hidden_size,
            config.num_hidden_layers,
            config.num_attention_heads,
            config.intermediate_size,
            config.max_position_embeddings,
            config.vocab_size,
            config.type_vocab_size,
        ];
        if dims.iter().any(|&d| d == 0 || d > 1 << 20) {
            return Err("config.json: a dimension is zero or implausibly large".to_owned());
        }
        if !config.hidden_size.is_multiple_of(config.num_attention_heads) {
            return Err("config.json: hidden_size is not a multiple of num_attention_heads".to_owned());
        }
        Ok(config)
    }

    fn head_dim(&self) -> usize {
        self.hidden_size / self.num_attention_heads
    }

    /// Whether this is a RoBERTa-family encoder (`roberta`, `xlm-roberta`).
    pub(crate) fn is_roberta(&self) -> bool {
        matches!(self.model_type.as_deref(), Some("roberta" | "xlm-roberta"))
    }

    /// The position id of a sequence's first token: 0 for BERT; `pad_token_id + 1` for
    /// RoBERTa, whose position ids count from after the padding index (fairseq's convention).
    pub(crate) fn position_offset(&self) -> usize {
        if self.is_roberta() { self.pad_token_id.unwrap_or(1) + 1 } else { 0 }
    }

    /// The model type as written in `config.json` (`bert` when absent).
    pub(crate) fn model_type(&self) -> &str {
        self.model_type.as_deref().unwrap_or("bert")
    }
}

/// One encoder layer; matrices are `in × out`, row-major.
struct Layer {
    /// Query (pre-scaled), key and value projections side by side: `hidden × 3·hidden`.
    qkv_weight: Vec<f32>,
    qkv_bias: Vec<f32>,
    attention_out_weight: Vec<f32>,
    attention_out_bias: Vec<f32>,
    attention_norm_weight: Vec<f32>,
    attention_norm_bias: Vec<f32>,
    intermediate_weight: Vec<f32>,
    intermediate_bias: Vec<f32>,
    output_weight: Vec<f32>,
    output_bias: Vec<f32>,
    output_norm_weight: Vec<f32>,
    output_norm_bias: Vec<f32>,
}

/// A loaded BERT encoder.
pub(crate) struct Bert {
    config: BertConfig,
    pooling: Pooling,
    word_embeddings: Vec<f32>,
    /// Position embeddings with the token-type-0 embedding already added.
    position_embeddings: Vec<f32>,
    embedding_norm_weight: Vec<f32>,
    embedding_norm_bias: Vec<f32>,
    layers: Vec<Layer>,
    /// The layers' four linear maps in int8 (one per layer), for [`Weights::Int8`]: made by
    /// the first int8 pass ([`Bert::quantized`]), so a process that runs only f32 never pays
    /// for it; empty when a weight is not finite.
    quantized: OnceLock<Vec<QLayer>>,
}

/// One layer's linear maps in int8 with a scale per output column and group of rows (see
/// [`kernels::QMatrix`]): a quarter of the bytes a query has to stream.
struct QLayer {
    qkv: QMatrix,
    attention_out: QMatrix,
    intermediate: QMatrix,
    output: QMatrix,
}

/// Which weights a forward pass multiplies by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Weights {
    /// The model's own f32 weights (the reference, and the probe's layer means).
    F32,
    /// The int8 copy ([`Bert::quantized`]) times activations quantised to int8 on the fly
    /// ([`kernels::matmul_q8`]); falls back to f32 when there is no copy.
    Int8,
}

impl std::fmt::Debug for Bert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bert").field("config", &self.config).finish_non_exhaustive()
    }
}

/// Reads tensors by name from a safetensors file, checking dtype and shape.
struct TensorSource<'a> {
    tensors: SafeTensors<'a>,
    prefix: &'static str,
}

impl TensorSource<'_> {
    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, String> {
        let full = format!("{}{name}", self.prefix);
        let view = self.tensors.tensor(&full).map_err(|_| format!("model.safetensors: tensor {full} is missing"))?;
        if view.dtype() != Dtype::F32 {
            return Err(format!("model.safetensors: tensor {full} has dtype {:?}, expected F32", view.dtype()));
        }
        if view.shape() != shape {
            return Err(format!("model.safetensors: tensor {full} has shape {:?}, expected {shape:?}", view.shape()));
        }
        let data = view.data();
        if data.len() != shape.iter().product::<usize>() * 4 {
            return Err(format!(
                "model.safetensors: tensor {full} has {} bytes, expected {}",
                data.len(),
                shape.iter().product::<usize>() * 4
            ));
        }
        Ok(data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
    }

    /// A PyTorch `Linear` weight (`out × in`) transposed to `in × out`, scaled by `scale`.
    fn linear(&self, name: &str, inputs: usize, outputs: usize, scale: f32) -> Result<Vec<f32>, String> {
        let weight = self.get(name, &[outputs, inputs])?;
        let mut transposed = vec![0.0f32; inputs * outputs];
        for (o, row) in weight.chunks_exact(inputs).enumerate() {
            for (i, &w) in row.iter().enumerate() {
                transposed[i * outputs + o] = w * scale;
            }
        }
        Ok(transposed)
    }
}

impl Bert {
    /// Builds the encoder from parsed configuration and the bytes of `model.safetensors`.
    /// The error is a human-readable reason.
    pub(crate) fn from_safetensors(config: BertConfig, pooling: Pooling, bytes: &[u8]) -> Result<Self, String> {
        let tensors = SafeTensors::deserialize(bytes).map_err(|e| format!("model.safetensors: {e}"))?;
        let prefix = ["", "bert.", "roberta."]
            .into_iter()
            .find(|p| tensors.tensor(&format!("{p}embeddings.word_embeddings.weight")).is_ok())
            .unwrap_or("");
        let source = TensorSource { tensors, prefix };
        let hidden = config.hidden_size;
        let inter = config.intermediate_size;
        let word_embeddings = source.get("embeddings.word_embeddings.weight", &[config.vocab_size, hidden])?;
        let mut position_embeddings =
            source.get("embeddings.position_embeddings.weight", &[config.max_position_embeddings, hidden])?;
        let token_types = source.get("embeddings.token_type_embeddings.weight", &[config.type_vocab_size, hidden])?;
        for row in position_embeddings.chunks_exact_mut(hidden) {
            row.iter_mut().zip(&token_types[..hidden]).for_each(|(p, t)| *p += t);
        }
        let embedding_norm_weight = source.get("embeddings.LayerNorm.weight", &[hidden])?;
        let embedding_norm_bias = source.get("embeddings.LayerNorm.bias", &[hidden])?;

        let scale = 1.0 / (config.head_dim() as f32).sqrt();
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for index in 0..config.num_hidden_layers {
            let name = |suffix: &str| format!("encoder.layer.{index}.{suffix}");
            let query = source.linear(&name("attention.self.query.weight"), hidden, hidden, scale)?;
            let key = source.linear(&name("attention.self.key.weight"), hidden, hidden, 1.0)?;
            let value = source.linear(&name("attention.self.value.weight"), hidden, hidden, 1.0)?;
            let mut qkv_weight = Vec::with_capacity(hidden * 3 * hidden);
            for row in 0..hidden {
                for part in [&query, &key, &value] {
                    qkv_weight.extend_from_slice(&part[row * hidden..(row + 1) * hidden]);
                }
            }
            let mut qkv_bias = source.get(&name("attention.self.query.bias"), &[hidden])?;
            qkv_bias.iter_mut().for_each(|b| *b *= scale);
            qkv_bias.extend(source.get(&name("attention.self.key.bias"), &[hidden])?);
            qkv_bias.extend(source.get(&name("attention.self.value.bias"), &[hidden])?);
            layers.push(Layer {
                qkv_weight,
                qkv_bias,
                attention_out_weight: source.linear(&name("attention.output.dense.weight"), hidden, hidden, 1.0)?,
                attention_out_bias: source.get(&name("attention.output.dense.bias"), &[hidden])?,
                attention_norm_weight: source.get(&name("attention.output.LayerNorm.weight"), &[hidden])?,
                attention_norm_bias: source.get(&name("attention.output.LayerNorm.bias"), &[hidden])?,
                intermediate_weight: source.linear(&name("intermediate.dense.weight"), hidden, inter, 1.0)?,
                intermediate_bias: source.get(&name("intermediate.dense.bias"), &[inter])?,
                output_weight: source.linear(&name("output.dense.weight"), inter, hidden, 1.0)?,
                output_bias: source.get(&name("output.dense.bias"), &[hidden])?,
                output_norm_weight: source.get(&name("output.LayerNorm.weight"), &[hidden])?,
                output_norm_bias: source.get(&name("output.LayerNorm.bias"), &[hidden])?,
            });
        }
        // Position ids start at the offset (RoBERTa), so rows before it are never used.
        let offset = config.position_offset();
        if offset >= config.max_position_embeddings {
            return Err(format!("config.json: pad_token_id leaves no positions of {}", config.max_position_embeddings));
        }
        position_embeddings.drain(..offset * hidden);
        Ok(Self {
            config,
            pooling,
            word_embeddings,
            position_embeddings,
            embedding_norm_weight,
            embedding_norm_bias,
            layers,
            quantized: OnceLock::new(),
        })
    }

    /// The int8 copy of every layer's linear maps that [`Weights::Int8`] uses (about a
    /// quarter of the f32 layers' size again; 10 MB for MiniLM, a few tens of milliseconds
    /// to make), made on first use; empty when it cannot be made.
    fn quantized(&self) -> &[QLayer] {
        self.quantized.get_or_init(|| {
            let hidden = self.config.hidden_size;
            let inter = self.config.intermediate_size;
            let layers: Option<Vec<QLayer>> = self
                .layers
                .iter()
                .map(|layer| {
                    Some(QLayer {
                        qkv: QMatrix::quantize(&layer.qkv_weight, hidden, 3 * hidden)?,
                        attention_out: QMatrix::quantize(&layer.attention_out_weight, hidden, hidden)?,
                        intermediate: QMatrix::quantize(&layer.intermediate_weight, hidden, inter)?,
                        output: QMatrix::quantize(&layer.output_weight, inter, hidden)?,
                    })
                })
                .collect();
            let layers = layers.unwrap_or_default();
            let bytes: usize = layers
                .iter()
                .map(|q| q.qkv.bytes() + q.attention_out.bytes() + q.intermediate.bytes() + q.output.bytes())
                .sum();
            tracing::debug!(bytes, "made the int8 copy of the model's linear maps");
            layers
        })
    }

    /// Width of the sentence vectors.
    pub(crate) fn hidden_size(&self) -> usize {
        self.config.hidden_size
    }

    /// Number of rows of the word embedding table: every token id must be below it.
    pub(crate) fn num_layers(&self) -> usize {
        self.layers.len()
    }

    pub(crate) fn vocab_size(&self) -> usize {
        self.config.vocab_size
    }

    /// Longest sequence the position embeddings cover (after RoBERTa's offset).
    pub(crate) fn max_positions(&self) -> usize {
        self.config.max_position_embeddings - self.config.position_offset()
    }

    /// Encodes a batch of token-id sequences (each non-empty, at most `max_positions()` long,
    /// ids below `vocab_size()`) into pooled, L2-normalised vectors, one per sequence.
    ///
    /// With [`Weights::Int8`] (and an int8 copy) the linear maps are integer products of
    /// int8 weights and int8 activations, and every sequence's vector is the same whatever
    /// else is in the batch (and on every kernel path).
    ///
    /// That is [`Output::Embedding`]; with [`Output::LayerMean`] it stops after that many
    /// layers and returns each sequence's mean hidden state there (every token, start and
    /// end tokens included), not normalised.
    pub(crate) fn encode_batch(
        &self,
        batch: &[&[u32]],
        scratch: &mut Scratch,
        weights: Weights,
        output: Output,
    ) -> Vec<Vec<f32>> {
        let hidden = self.config.hidden_size;
        let inter = self.config.intermediate_size;
        let eps = self.config.layer_norm_eps as f32;
        let tokens: usize = batch.iter().map(|s| s.len()).sum();
        scratch.prepare(tokens, hidden, inter);
        let Scratch { column_threads, x, tmp, qkv, context, intermediate, scores } = scratch;
        let column_threads = *column_threads;
        let lone = batch.len() == 1;

        // Embeddings: word + (position + token type 0), then layer norm.
        let mut row_index = 0;
        for sentence in batch {
            for (position, &id) in sentence.iter().enumerate() {
                let row = &mut x[row_index * hidden..(row_index + 1) * hidden];
                let word = &self.word_embeddings[id as usize * hidden..(id as usize + 1) * hidden];
                let pos = &self.position_embeddings[position * hidden..(position + 1) * hidden];
                for ((out, &w), &p) in row.iter_mut().zip(word).zip(pos) {
                    *out = w + p;
                }
                kernels::layer_norm(row, &self.embedding_norm_weight, &self.embedding_norm_bias, eps);
                row_index += 1;
            }
        }

        let quantized: &[QLayer] = if weights == Weights::Int8 { self.quantized() } else { &[] };
        let int8 = !quantized.is_empty();
        let depth = match output {
            Output::Embedding | Output::EmbeddingAndLayerMeans(_) => self.layers.len(),
            Output::LayerMean(depth) => depth.min(self.layers.len()),
        };
        // Per sequence, the means after the layers `EmbeddingAndLayerMeans` asks for.
        let capture = if let Output::EmbeddingAndLayerMeans(layers) = output { layers } else { 0 };
        let mut layer_means: Vec<Vec<f32>> = if capture == 0 {
            Vec::new()
        } else {
            vec![Vec::with_capacity(capture.count_ones() as usize * hidden); batch.len()]
        };
        for (index, layer) in self.layers.iter().enumerate().take(depth) {
            // `c += a · w` with the chosen weights: the f32 matrix (`rows × cols`) or its
            // int8 copy (which also takes the f32 matrix, for each row's outliers).
            let linear = |a: &[f32], w: &[f32], q: fn(&QLayer) -> &QMatrix, c: &mut [f32], rows: usize, cols: usize| {
                if int8 {
                    // Only a text alone splits its int8 products: several texts in one pass
                    // mean queries queued under load, when the other core is busy anyway.
                    kernels::matmul_q8(a, tokens, q(&quantized[index]), w, c, if lone { column_threads } else { 1 });
                } else {
                    kernels::matmul_columns(
                        a,
                        View::dense(0, tokens, rows),
                        w,
                        View::dense(0, rows, cols),
                        c,
                        View::dense(0, tokens, cols),
                        true,
                        column_threads,
                    );
                }
            };
            // Fused query/key/value projection over all tokens.
            fill_rows(qkv, &layer.qkv_bias, tokens);
            linear(x, &layer.qkv_weight, |q| &q.qkv, qkv, hidden, 3 * hidden);
            self.attention(batch, qkv, context, scores);
            // Attention output projection + bias + residual, then layer norm.
            add_rows(tmp, x, &layer.attention_out_bias, tokens);
            linear(context, &layer.attention_out_weight, |q| &q.attention_out, tmp, hidden, hidden);
            for row in tmp[..tokens * hidden].chunks_exact_mut(hidden) {
                kernels::layer_norm(row, &layer.attention_norm_weight, &layer.attention_norm_bias, eps);
            }
            std::mem::swap(x, tmp);
            // Feed-forward: intermediate + GELU, output + bias + residual, layer norm.
            fill_rows(intermediate, &layer.intermediate_bias, tokens);
            linear(x, &layer.intermediate_weight, |q| &q.intermediate, intermediate, hidden, inter);
            kernels::gelu(&mut intermediate[..tokens * inter]);
            add_rows(tmp, x, &layer.output_bias, tokens);
            linear(intermediate, &layer.output_weight, |q| &q.output, tmp, inter, hidden);
            for row in tmp[..tokens * hidden].chunks_exact_mut(hidden) {
                kernels::layer_norm(row, &layer.output_norm_weight, &layer.output_norm_bias, eps);
            }
            std::mem::swap(x, tmp);
            if capture & (1 << (index + 1)) != 0 {
                let mut start = 0;
                for (sentence, means) in batch.iter().zip(layer_means.iter_mut()) {
                    means.extend(mean_rows(&x[start * hidden..(start + sentence.len()) * hidden], hidden));
                    start += sentence.len();
                }
            }
        }

        // Pooling over each sentence's tokens, then L2 normalisation.
        let mut start = 0;
        batch
            .iter()
            .map(|sentence| {
                let rows = &x[start * hidden..(start + sentence.len()) * hidden];
                let embedding = !matches!(output, Output::LayerMean(_));
                let pooling = if embedding { self.pooling } else { Pooling::Mean };
                let mut pooled = match pooling {
                    Pooling::Mean => mean_rows(rows, hidden),
                    Pooling::Cls => rows[..hidden].to_vec(),
                };
                if embedding {
                    kernels::l2_normalize(&mut pooled);
                }
                start += sentence.len();
                pooled
            })
            .zip(layer_means.into_iter().chain(std::iter::repeat_with(Vec::new)))
            .map(|(mut pooled, means)| {
                pooled.extend(means);
                pooled
            })
            .collect()
    }

    /// Self-attention of every sentence and head: `context = softmax(Q·Kᵀ)·V` on the
    /// sentence's own rows (the scale is already in Q).
    fn attention(&self, batch: &[&[u32]], qkv: &[f32], context: &mut [f32], scores: &mut Vec<f32>) {
        let hidden = self.config.hidden_size;
        let head_dim = self.config.head_dim();
        let stride = 3 * hidden;
        let mut start = 0;
        for sentence in batch {
            let len = sentence.len();
            if scores.len() < len * len {
                scores.resize(len * len, 0.0);
            }
            for head in 0..self.config.num_attention_heads {
                let column = head * head_dim;
                let query = View::block(start * stride + column, len, head_dim, stride);
                let key = View::block(start * stride + hidden + column, len, head_dim, stride);
                let value = View::block(start * stride + 2 * hidden + column, len, head_dim, stride);
                kernels::matmul(qkv, query, qkv, key.t(), scores, View::dense(0, len, len), false);
                for row in scores[..len * len].chunks_exact_mut(len) {
                    kernels::softmax(row);
                }
                let out = View::block(start * hidden + column, len, head_dim, hidden);
                kernels::matmul(scores, View::dense(0, len, len), qkv, value, context, out, false);
            }
            start += len;
        }
    }
}

/// The mean of `rows` (`hidden` values each), row by row in order (so every caller gets
/// the same rounding).
fn mean_rows(rows: &[f32], hidden: usize) -> Vec<f32> {
    let mut pooled = vec![0.0f32; hidden];
    for row in rows.chunks_exact(hidden) {
        pooled.iter_mut().zip(row).for_each(|(p, &v)| *p += v);
    }
    let inv = 1.0 / (rows.len() / hidden).max(1) as f32;
    pooled.iter_mut().for_each(|p| *p *= inv);
    pooled
}

/// What a forward pass returns per sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Output {
    /// The sentence embedding: every layer, the model's pooling, L2-normalised.
    Embedding,
    /// The mean over the sequence's tokens of the hidden state after this many layers (0:
    /// the embedding layer's output), not normalised.
    LayerMean(usize),
    /// The sentence embedding, then the mean hidden state after each layer `l` whose bit
    /// `1 << l` is set (in order; each as [`Output::LayerMean`] gives it): a stored text's
    /// importance probe reads it without a second pass.
    EmbeddingAndLayerMeans(u32),
}

/// Working memory of one forward pass, reused across batches by one thread.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    /// Threads a linear layer may split its columns over (a lone short query; see
    /// [`kernels::matmul_columns`]); 0 or 1: this thread only.
    pub(crate) column_threads: usize,
    x: Vec<f32>,
    tmp: Vec<f32>,
    qkv: Vec<f32>,
    context: Vec<f32>,
    intermediate: Vec<f32>,
    scores: Vec<f32>,
}

impl Scratch {
    fn prepare(&mut self, tokens: usize, hidden: usize, inter: usize) {
        for (buffer, width) in [
            (&mut self.x, hidden),
            (&mut self.tmp, hidden),
            (&mut self.qkv, 3 * hidden),
            (&mut self.context, hidden),
            (&mut self.intermediate, inter),
        ] {
            if buffer.len() < tokens * width {
                buffer.resize(tokens * width, 0.0);
            }
        }
    }
}

/// Writes `bias` into each of the first `rows` rows of `out`.
fn fill_rows(out: &mut [f32], bias: &[f32], rows: usize) {
    for row in out[..rows * bias.len()].chunks_exact_mut(bias.len()) {
        row.copy_from_slice(bias);
    }
}

/// Writes `input + bias` into each of the first `rows` rows of `out`.
fn add_rows(out: &mut [f32], input: &[f32], bias: &[f32], rows: usize) {
    let width = bias.len();
    for (row, inp) in out[..rows * width].chunks_exact_mut(width).zip(input.chunks_exact(width)) {
        for ((o, &i), &b) in row.iter_mut().zip(inp).zip(bias) {
            *o = i + b;
        }
    }
}
