"""Writes the paged, ragged and dense attention problems under problems/cuda (definition.json,
workload.jsonl): python3 problems/cuda/tools/make_attention_problems.py [problems/cuda]."""
import json
import os
import sys
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attention_problem_snippets as S

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
TOL = {"max_atol": 0.02, "max_rtol": 0.02}


def axis_var(description):
    return {"type": "var", "description": description}


def axis_const(value, description):
    return {"type": "const", "value": value, "description": description}


def tensor(shape, dtype, description):
    return {"shape": shape, "dtype": dtype, "description": description}


def write(dirname, definition, workloads, custom):
    path = os.path.join(ROOT, dirname)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "definition.json"), "w") as f:
        json.dump(definition, f, indent=2)
        f.write("\n")
    with open(os.path.join(path, "workload.jsonl"), "w") as f:
        for axes in workloads:
            kind = {"type": "custom"} if custom else {"type": "random"}
            line = {
                "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, "kernelarc/problems/cuda/" + dirname +
                                       "/" + json.dumps(axes, sort_keys=True))),
                "axes": axes,
                "inputs": {name: dict(kind) for name in definition["inputs"]},
                "tolerance": dict(TOL),
            }
            f.write(json.dumps(line) + "\n")


SCALE_NOTE = ("sm_scale is 1/sqrt(head_dim) in workloads with an even number of sequences and "
              "1/16 in those with an odd number, so a kernel must read it.")
TOL_NOTE = ("Tolerance 2e-2 absolute and relative on both outputs, as for the dense attention "
            "problems (bfloat16 probabilities in the second product, split-KV merging).")


# ---- 1, 2: paged decode ---------------------------------------------------------------------

def paged_decode(dirname, q_heads, kv_heads, page_size, model, workloads):
    last = page_size > 1
    inputs = {
        "q": tensor(["batch_size", "num_qo_heads", "head_dim"], "bfloat16",
                    "one query token per sequence"),
        "k_cache": tensor(["num_pages", "page_size", "num_kv_heads", "head_dim"], "bfloat16",
                          "paged key cache; only the pages that kv_indices names are read"),
        "v_cache": tensor(["num_pages", "page_size", "num_kv_heads", "head_dim"], "bfloat16",
                          "paged value cache"),
        "kv_indptr": tensor(["len_indptr"], "int32",
                            "sequence b's pages are kv_indices[kv_indptr[b]:kv_indptr[b+1]]"),
        "kv_indices": tensor(["num_kv_indices"], "int32", "page ids, in token order per sequence"),
    }
    if last:
        inputs["kv_last_page_len"] = tensor(
            ["batch_size"], "int32", "tokens in each sequence's last page, 1 to page_size")
    inputs["sm_scale"] = tensor(None, "float32", "softmax scale")
    tokens = "num_kv_indices * page_size"
    fill_text = (" A sequence's length is (its pages - 1) * 16 + kv_last_page_len[b]; the last "
                 "page's fill cycles through 1..16 over the sequences." if last else
                 " With one-token pages a sequence's length is its page count.")
    definition = {
        "name": dirname,
        "op_type": "gqa_paged",
        "description": (
            f"Batched grouped-query attention decode over a paged KV cache, {model} geometry: "
            f"{q_heads} query heads share {kv_heads} key/value heads ({q_heads // kv_heads} per "
            f"group), 128 dims, pages of {page_size} token{'s' if page_size > 1 else ''}, "
            "bfloat16. Each sequence's one query attends to all its cached tokens (no mask): "
            "output = softmax(sm_scale * q k^T) v per query head, and lse = the base-2 "
            "log-sum-exp of the scaled logits (FlashInfer's convention), float32. The reference "
            "works in float32. Index arrays come from make_inputs: page counts per sequence "
            "differ (a spread of about 20x around num_kv_indices / batch_size) and the pages are "
            "distinct ids of the num_pages cache in shuffled order, so sequences' pages "
            "interleave and a kernel that ignores kv_indices fails." + fill_text + " " +
            SCALE_NOTE + " " + TOL_NOTE + " flops and bytes count the pages read whole."),
        "axes": {
            "batch_size": axis_var("sequences, one query token each"),
            "num_qo_heads": axis_const(q_heads, "query heads"),
            "num_kv_heads": axis_const(kv_heads, "key/value heads"),
            "head_dim": axis_const(128, "dims per head"),
            "num_pages": axis_var("pages in the cache, used or not"),
            "page_size": axis_const(page_size, "tokens per page"),
            "len_indptr": axis_var("batch_size + 1"),
            "num_kv_indices": axis_var("pages used by the batch"),
        },
        "constraints": [
            "len_indptr == batch_size + 1",
            "num_kv_indices >= batch_size",
            "num_kv_indices <= num_pages",
            "num_kv_indices == kv_indptr[-1].item()",
        ],
        "inputs": inputs,
        "outputs": {
            "output": tensor(["batch_size", "num_qo_heads", "head_dim"], "bfloat16",
                             "attention output"),
            "lse": tensor(["batch_size", "num_qo_heads"], "float32",
                          "base-2 log-sum-exp of the scaled logits"),
        },
        "reference": (S.HEADER + S.INPUT_HELPERS +
                      S.MAKE_PAGED_DECODE.replace("{last_page_len}",
                                                  S.LAST_PAGE_LEN_INPUT if last else "") +
                      S.ATTEND +
                      S.RUN_PAGED_DECODE.replace("{last}", "kv_last_page_len, " if last else "")
                      .replace("{fill}", "fills = kv_last_page_len.tolist()" if last else
                               "fills = [page_size] * batch  # every page is full")),
        "custom_inputs_entrypoint": "make_inputs",
        "kernelarc": {
            "op_family": "attention",
            "op_params": {"causal": False, "decode": True, "layout": "paged", "lse_base": 2},
            "flops": f"4 * num_qo_heads * head_dim * {tokens}",
            "bytes": ("4 * batch_size * num_qo_heads * head_dim + 4 * batch_size * num_qo_heads"
                      f" + 4 * {tokens} * num_kv_heads * head_dim"
                      " + 4 * (len_indptr + num_kv_indices" + (" + batch_size)" if last else ")")),
            "baseline": S.BASE_PAGED_DECODE.replace(
                "{last}", "kv_last_page_len, " if last else "").replace(
                "{lengths}", "(pages - 1) * page_size + kv_last_page_len.long()" if last else
                "pages * page_size"),
        },
    }
    write(dirname, definition, workloads, custom=True)


def decode_workload(batch, used, pool):
    return {"batch_size": batch, "num_pages": pool, "len_indptr": batch + 1,
            "num_kv_indices": used}


paged_decode("gqa_paged_decode_h32_kv8_d128_ps1", 32, 8, 1, "Llama-3.1-8B", [
    decode_workload(1, 1, 37),
    decode_workload(1, 7, 100),
    decode_workload(7, 60, 257),
    decode_workload(3, 1500, 2048),
    decode_workload(16, 16000, 20011),
    decode_workload(4, 8188, 12000),
    decode_workload(1, 8192, 9000),
    decode_workload(32, 100000, 131072),
    decode_workload(64, 131008, 163840),
])

paged_decode("gqa_paged_decode_h64_kv8_d128_ps16", 64, 8, 16, "Llama-3-70B", [
    decode_workload(1, 1, 64),
    decode_workload(1, 7, 300),
    decode_workload(5, 160, 1000),
    decode_workload(13, 819, 2000),
    decode_workload(4, 512, 1500),
    decode_workload(1, 512, 700),
    decode_workload(64, 4096, 6000),
    decode_workload(48, 6000, 8192),
    decode_workload(32, 8192, 10000),
])


# ---- 3, 4: ragged and paged prefill ---------------------------------------------------------

PREFILL_FLOPS = ("2 * num_qo_heads * head_dim * total_q * (2 * {kv} - total_q)"
                 " // (len_indptr - 1)")
PREFILL_FLOPS_NOTE = ("flops assume equal lengths (total_q / batch queries over total_kv / batch "
                      "keys per sequence, the causal triangle halved): about 4 * q_len * kv_len "
                      "* head_dim per query head minus the masked part.")


def paged_prefill(dirname, workloads):
    definition = {
        "name": dirname,
        "op_type": "gqa_paged",
        "description": (
            "Batched causal grouped-query attention prefill over a paged KV cache, Llama-3.1-8B "
            "geometry: 32 query heads share 8 key/value heads, 128 dims, one-token pages, "
            "bfloat16. Sequence b's queries are q[qo_indptr[b]:qo_indptr[b+1]], its keys and "
            "values the cache pages kv_indices[kv_indptr[b]:kv_indptr[b+1]], and its queries are "
            "its last tokens: with Lq queries and Lkv keys (Lkv >= Lq), query i sees keys "
            "j <= i + Lkv - Lq (causal mask aligned to the bottom right, as FlashInfer does). "
            "Outputs: output = softmax(sm_scale * q k^T + mask) v per query head and lse, the "
            "base-2 log-sum-exp of the masked scaled logits, float32. The reference works in "
            "float32. Index arrays come from make_inputs: query counts per sequence differ "
            "(about 0.4x to 2.7x the mean), and where num_kv_indices > total_q a cached prefix "
            "(chunked prefill, prefix caching) precedes the queries of two thirds of the "
            "sequences (rounded; the others have none); the pages are "
            "distinct ids of the num_pages cache in shuffled order, so sequences' pages "
            "interleave and a kernel that ignores kv_indices fails. " + SCALE_NOTE + " " +
            TOL_NOTE + " " + PREFILL_FLOPS_NOTE.replace("total_kv", "num_kv_indices")),
        "axes": {
            "total_q": axis_var("query tokens over all sequences"),
            "num_qo_heads": axis_const(32, "query heads"),
            "num_kv_heads": axis_const(8, "key/value heads"),
            "head_dim": axis_const(128, "dims per head"),
            "num_pages": axis_var("pages in the cache, used or not"),
            "page_size": axis_const(1, "tokens per page"),
            "len_indptr": axis_var("sequences + 1"),
            "num_kv_indices": axis_var("pages (tokens) used by the batch"),
        },
        "constraints": [
            "total_q >= len_indptr - 1",
            "num_kv_indices >= total_q",
            "num_kv_indices <= num_pages",
            "total_q == qo_indptr[-1].item()",
            "num_kv_indices == kv_indptr[-1].item()",
        ],
        "inputs": {
            "q": tensor(["total_q", "num_qo_heads", "head_dim"], "bfloat16", "queries"),
            "k_cache": tensor(["num_pages", "page_size", "num_kv_heads", "head_dim"], "bfloat16",
                              "paged key cache; only the pages that kv_indices names are read"),
            "v_cache": tensor(["num_pages", "page_size", "num_kv_heads", "head_dim"], "bfloat16",
                              "paged value cache"),
            "qo_indptr": tensor(["len_indptr"], "int32",
                                "sequence b's queries are q[qo_indptr[b]:qo_indptr[b+1]]"),
            "kv_indptr": tensor(["len_indptr"], "int32",
                                "sequence b's pages are kv_indices[kv_indptr[b]:kv_indptr[b+1]]"),
            "kv_indices": tensor(["num_kv_indices"], "int32",
                                 "page ids, in token order per sequence"),
            "sm_scale": tensor(None, "float32", "softmax scale"),
        },
        "outputs": {
            "output": tensor(["total_q", "num_qo_heads", "head_dim"], "bfloat16",
                             "attention output"),
            "lse": tensor(["total_q", "num_qo_heads"], "float32",
                          "base-2 log-sum-exp of the masked scaled logits"),
        },
        "reference": S.HEADER + S.INPUT_HELPERS + S.MAKE_PAGED_PREFILL + S.ATTEND +
                     S.RUN_PAGED_PREFILL,
        "custom_inputs_entrypoint": "make_inputs",
        "kernelarc": {
            "op_family": "attention",
            "op_params": {"causal": True, "layout": "paged", "lse_base": 2},
            "flops": PREFILL_FLOPS.replace("{kv}", "num_kv_indices * page_size"),
            "bytes": ("4 * total_q * num_qo_heads * head_dim + 4 * total_q * num_qo_heads"
                      " + 4 * num_kv_indices * page_size * num_kv_heads * head_dim"
                      " + 4 * (2 * len_indptr + num_kv_indices)"),
            "baseline": S.BASE_PAGED_PREFILL,
        },
    }
    write(dirname, definition, workloads, custom=True)


def paged_prefill_workload(batch, total_q, used, pool):
    return {"total_q": total_q, "num_pages": pool, "len_indptr": batch + 1,
            "num_kv_indices": used}


paged_prefill("gqa_paged_prefill_causal_h32_kv8_d128_ps1", [
    paged_prefill_workload(1, 1, 1, 50),
    paged_prefill_workload(1, 7, 7, 64),
    paged_prefill_workload(1, 33, 500, 1000),
    paged_prefill_workload(3, 1000, 1000, 1500),
    paged_prefill_workload(7, 100, 4000, 5000),
    paged_prefill_workload(1, 2047, 2047, 3000),
    paged_prefill_workload(4, 1500, 6000, 8192),
    paged_prefill_workload(2, 4000, 8192, 10000),
    paged_prefill_workload(6, 6144, 16384, 20000),
])


def ragged_prefill(dirname, workloads):
    definition = {
        "name": dirname,
        "op_type": "gqa_ragged",
        "description": (
            "Batched causal grouped-query attention prefill over ragged (packed) sequences, "
            "Llama-3.1-8B geometry: 32 query heads share 8 key/value heads, 128 dims, bfloat16. "
            "Sequence b's queries are q[qo_indptr[b]:qo_indptr[b+1]] and its keys and values "
            "k and v[kv_indptr[b]:kv_indptr[b+1]]; its queries are its last tokens: with Lq "
            "queries and Lkv keys (Lkv >= Lq), query i sees keys j <= i + Lkv - Lq (causal "
            "mask aligned to the bottom right, as FlashInfer does). Outputs: output = "
            "softmax(sm_scale * q k^T + mask) v per query head and lse, the base-2 log-sum-exp "
            "of the masked scaled logits, float32. The reference works in float32. The offsets "
            "come from make_inputs: query counts per sequence differ (about 0.4x to 2.7x the "
            "mean); where total_kv > total_q two thirds of the sequences (rounded) have keys "
            "before their queries (a later chunk of a prompt) and the others none. " + SCALE_NOTE + " " +
            TOL_NOTE + " " + PREFILL_FLOPS_NOTE),
        "axes": {
            "total_q": axis_var("query tokens over all sequences"),
            "total_kv": axis_var("key/value tokens over all sequences"),
            "num_qo_heads": axis_const(32, "query heads"),
            "num_kv_heads": axis_const(8, "key/value heads"),
            "head_dim": axis_const(128, "dims per head"),
            "len_indptr": axis_var("sequences + 1"),
        },
        "constraints": [
            "total_q >= len_indptr - 1",
            "total_kv >= total_q",
            "total_q == qo_indptr[-1].item()",
            "total_kv == kv_indptr[-1].item()",
        ],
        "inputs": {
            "q": tensor(["total_q", "num_qo_heads", "head_dim"], "bfloat16", "queries"),
            "k": tensor(["total_kv", "num_kv_heads", "head_dim"], "bfloat16", "keys"),
            "v": tensor(["total_kv", "num_kv_heads", "head_dim"], "bfloat16", "values"),
            "qo_indptr": tensor(["len_indptr"], "int32",
                                "sequence b's queries are q[qo_indptr[b]:qo_indptr[b+1]]"),
            "kv_indptr": tensor(["len_indptr"], "int32",
                                "sequence b's keys are k[kv_indptr[b]:kv_indptr[b+1]]"),
            "sm_scale": tensor(None, "float32", "softmax scale"),
        },
        "outputs": {
            "output": tensor(["total_q", "num_qo_heads", "head_dim"], "bfloat16",
                             "attention output"),
            "lse": tensor(["total_q", "num_qo_heads"], "float32",
                          "base-2 log-sum-exp of the masked scaled logits"),
        },
        "reference": S.HEADER + S.INPUT_HELPERS + S.MAKE_RAGGED_PREFILL + S.ATTEND +
                     S.RUN_RAGGED_PREFILL,
        "custom_inputs_entrypoint": "make_inputs",
        "kernelarc": {
            "op_family": "attention",
            "op_params": {"causal": True, "layout": "ragged", "lse_base": 2},
            "flops": PREFILL_FLOPS.replace("{kv}", "total_kv"),
            "bytes": ("4 * total_q * num_qo_heads * head_dim + 4 * total_q * num_qo_heads"
                      " + 4 * total_kv * num_kv_heads * head_dim + 8 * len_indptr"),
            "baseline": S.BASE_RAGGED_PREFILL,
        },
    }
    write(dirname, definition, workloads, custom=True)


def ragged_workload(batch, total_q, total_kv):
    return {"total_q": total_q, "total_kv": total_kv, "len_indptr": batch + 1}


ragged_prefill("gqa_ragged_prefill_causal_h32_kv8_d128", [
    ragged_workload(1, 1, 1),
    ragged_workload(2, 14, 14),
    ragged_workload(1, 33, 511),
    ragged_workload(4, 2000, 2000),
    ragged_workload(1, 2047, 2047),
    ragged_workload(16, 800, 16000),
    ragged_workload(3, 3000, 9000),
    ragged_workload(8, 8192, 8192),
])


# ---- 5: dense prefill ---------------------------------------------------------------------

def dense(dirname, q_heads, kv_heads, head_dim, causal, model, workloads):
    one_axis = causal
    q_seq = "seq_len" if one_axis else "q_len"
    kv_seq = "seq_len" if one_axis else "kv_len"
    axes = {"batch_size": axis_var("number of sequences")}
    if one_axis:
        axes["seq_len"] = axis_var("tokens per sequence (queries and keys)")
    else:
        axes["q_len"] = axis_var("queries per sequence")
        axes["kv_len"] = axis_var("keys and values per sequence")
    axes["num_qo_heads"] = axis_const(q_heads, "query heads")
    axes["num_kv_heads"] = axis_const(kv_heads, "key/value heads")
    axes["head_dim"] = axis_const(head_dim, "dims per head")
    group = q_heads // kv_heads
    if causal:
        what = ("Causal self-attention prefill (position j > i masked; queries and keys have one "
                "length, so the mask is the usual triangle)")
        lengths = "Sequence lengths are irregular (1 to 4096)"
        flops = "2 * batch_size * num_qo_heads * seq_len * seq_len * head_dim"
        bytes_ = ("4 * batch_size * num_qo_heads * seq_len * head_dim"
                  " + 4 * batch_size * num_kv_heads * seq_len * head_dim")
    else:
        what = ("Non-causal attention (every query sees every key, as an encoder or a "
                "bidirectional prefix does)")
        lengths = ("Query and key lengths are irregular (1 to 4096) and differ in some "
                   "workloads")
        flops = "4 * batch_size * num_qo_heads * q_len * kv_len * head_dim"
        bytes_ = ("4 * batch_size * num_qo_heads * q_len * head_dim"
                  " + 4 * batch_size * num_kv_heads * kv_len * head_dim")
    definition = {
        "name": dirname,
        "op_type": "attention",
        "description": (
            f"{what} with {model}'s grouped-query geometry: {q_heads} query heads share "
            f"{kv_heads} key/value heads ({group} per group), {head_dim} dims, bfloat16, in "
            "[batch, heads, seq, dim] layout: output = softmax(q k^T / sqrt(head_dim)) v per "
            "query head h, reading key/value head h // " + str(group) + ". The reference works "
            f"in float32, one sequence at a time. {lengths}; tolerance 2e-2 absolute and "
            "relative, which allows bfloat16 probabilities in the second product."),
        "axes": axes,
        "inputs": {
            "q": tensor(["batch_size", "num_qo_heads", q_seq, "head_dim"], "bfloat16", "queries"),
            "k": tensor(["batch_size", "num_kv_heads", kv_seq, "head_dim"], "bfloat16", "keys"),
            "v": tensor(["batch_size", "num_kv_heads", kv_seq, "head_dim"], "bfloat16", "values"),
        },
        "outputs": {
            "output": tensor(["batch_size", "num_qo_heads", q_seq, "head_dim"], "bfloat16",
                             "attention output"),
        },
        "reference": ("import math\n\nimport torch\n\nLN2 = math.log(2.0)\n"
                      f"CAUSAL = {causal}\n" + S.ATTEND.split("\n\n\ndef gather")[0] + "\n" +
                      S.RUN_DENSE),
        "kernelarc": {
            "op_family": "attention",
            "op_params": {"causal": causal, "layout": "bhsd"},
            "flops": flops,
            "bytes": bytes_,
            "baseline": S.BASE_DENSE.replace("{causal}", str(causal)),
        },
    }
    write(dirname, definition, workloads, custom=False)


dense("attention_prefill_bf16_h32_kv8_d64", 32, 8, 64, True, "Llama-3.2-1B", [
    {"batch_size": b, "seq_len": s} for b, s in
    [(1, 1), (4, 7), (2, 33), (8, 128), (2, 511), (1, 1000), (3, 2047), (16, 1024), (2, 4096)]])

dense("attention_prefill_bf16_h28_kv4_d128_noncausal", 28, 4, 128, False, "Qwen2.5-7B", [
    {"batch_size": b, "q_len": q, "kv_len": k} for b, q, k in
    [(1, 1, 1), (3, 7, 7), (2, 33, 500), (8, 128, 128), (2, 511, 511), (1, 1000, 2047),
     (1, 2047, 2047), (2, 1024, 4096), (4, 4096, 4096)]])


# ---- NVFP4 key/value cache decode ------------------------------------------------------------

NVFP4_DEQUANTIZE = '''import torch

# E2M1 values by 4-bit code: bit 3 is the sign, bits 2..0 index the magnitudes.
E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def dequantize(packed, scale):
    """[..., head_dim // 2] float4_e2m1fn_x2 (first value in the low nibble) times its
    [..., head_dim // 16] float8_e4m3fn block scales, as float32 [..., head_dim]."""
    codes = packed.view(torch.uint8)
    table = torch.tensor(E2M1, dtype=torch.float32, device=packed.device)
    values = torch.stack([table[(codes & 15).long()], table[(codes >> 4).long()]], dim=-1)
    return values.flatten(-2) * scale.float().repeat_interleave(16, dim=-1)
'''

NVFP4_MAKE_INPUTS = '''

def make_inputs(axes, device):
    batch, kv_len = axes["batch_size"], axes["kv_len"]
    q_heads, kv_heads, head_dim = axes["num_q_heads"], axes["num_kv_heads"], axes["head_dim"]
    cache = (batch, kv_len, kv_heads)
    # Every byte value is a valid pair of codes, so uniform bytes cover all 16 codes (-0
    # included) in both nibbles; the block scales are positive, finite and spread over three
    # octaves (2^-4 to 2^-1), so a kernel that drops or misplaces one is caught.
    def codes():
        return torch.randint(0, 256, cache + (head_dim // 2,), dtype=torch.uint8,
                             device=device).view(torch.float4_e2m1fn_x2)

    def scales():
        exponent = torch.rand(cache + (head_dim // 16,), device=device) * 3.0 - 4.0
        return torch.exp2(exponent).to(torch.float8_e4m3fn)

    return {
        "q": torch.randn(batch, q_heads, head_dim, dtype=torch.bfloat16, device=device),
        "k_cache": codes(),
        "v_cache": codes(),
        "k_scale": scales(),
        "v_scale": scales(),
    }
'''

NVFP4_RUN = '''

@torch.no_grad()
def run(q, k_cache, v_cache, k_scale, v_scale):
    batch, q_heads, head_dim = q.shape
    kv_heads = k_cache.shape[2]
    k = dequantize(k_cache, k_scale).transpose(1, 2)  # [batch, kv_heads, kv_len, head_dim]
    v = dequantize(v_cache, v_scale).transpose(1, 2)
    qg = q.to(torch.float32).view(batch, kv_heads, q_heads // kv_heads, head_dim)
    scores = torch.matmul(qg, k.transpose(-1, -2)) * head_dim ** -0.5
    probs = torch.softmax(scores, dim=-1)
    out = torch.matmul(probs, v)
    return out.reshape(batch, q_heads, head_dim).to(q.dtype)
'''

NVFP4_BASELINE = '''import torch.nn.functional as F


@torch.no_grad()
def run(q, k_cache, v_cache, k_scale, v_scale):
    # The cache dequantized to bfloat16 once, then SDPA's fused GQA decode.
    k = dequantize(k_cache, k_scale).to(q.dtype).transpose(1, 2)
    v = dequantize(v_cache, v_scale).to(q.dtype).transpose(1, 2)
    out = F.scaled_dot_product_attention(q.unsqueeze(2), k, v, enable_gqa=True)
    return out.squeeze(2)
'''


def nvfp4_decode(dirname, q_heads, kv_heads, head_dim, model, workloads):
    cache = ["batch_size", "kv_len", "num_kv_heads"]
    definition = {
        "name": dirname,
        "op_type": "attention",
        "description": (
            f"Grouped-query attention for one decode step over an NVFP4 key/value cache, {model} "
            f"geometry: {q_heads} query heads share {kv_heads} key/value heads "
            f"({q_heads // kv_heads} per group), {head_dim} dims. The cache is "
            "[batch, kv_len, kv_heads, head_dim] in NVFP4: E2M1 values packed two per byte "
            "(float4_e2m1fn_x2, the first value in the low nibble; the last axis counts bytes) "
            "with one float8_e4m3fn scale per 16 consecutive values of a head row. q and the "
            "output are bfloat16. output = softmax(q k^T / sqrt(head_dim)) v per query head, k "
            "and v dequantized (code value x block scale); the reference works in float32. "
            "Hopper has no FP4 tensor cores, so a kernel dequantizes in registers. Batch and "
            "cache length are irregular (kv_len 1 to 8192); tolerance 2e-2 absolute and "
            "relative. Needs torch >= 2.8 (torch.float4_e2m1fn_x2)."),
        "axes": {
            "batch_size": axis_var("sequences decoding one token each"),
            "kv_len": axis_var("cached positions per sequence"),
            "num_q_heads": axis_const(q_heads, "query heads"),
            "num_kv_heads": axis_const(kv_heads, "key/value heads"),
            "head_dim": axis_const(head_dim, "dims per head"),
            "head_dim_packed": {"type": "expr", "expression": "head_dim // 2",
                                "description": "bytes per cached head row, two values each"},
            "scale_blocks": {"type": "expr", "expression": "head_dim // 16",
                             "description": "block scales per cached head row"},
        },
        "inputs": {
            "q": tensor(["batch_size", "num_q_heads", "head_dim"], "bfloat16",
                        "the new token's queries"),
            "k_cache": tensor(cache + ["head_dim_packed"], "float4_e2m1fn_x2",
                              "cached keys, E2M1 codes two per byte"),
            "v_cache": tensor(cache + ["head_dim_packed"], "float4_e2m1fn_x2",
                              "cached values, E2M1 codes two per byte"),
            "k_scale": tensor(cache + ["scale_blocks"], "float8_e4m3fn",
                              "one positive scale per 16 key values"),
            "v_scale": tensor(cache + ["scale_blocks"], "float8_e4m3fn",
                              "one positive scale per 16 value values"),
        },
        "outputs": {
            "output": tensor(["batch_size", "num_q_heads", "head_dim"], "bfloat16",
                             "attention output"),
        },
        "reference": NVFP4_DEQUANTIZE + NVFP4_MAKE_INPUTS + NVFP4_RUN,
        "custom_inputs_entrypoint": "make_inputs",
        "kernelarc": {
            "op_family": "attention_nvfp4",
            "op_params": {"causal": False, "decode": True, "layout": "bshd"},
            "flops": "4 * batch_size * num_q_heads * kv_len * head_dim",
            "bytes": ("4 * batch_size * num_q_heads * head_dim"
                      " + 2 * batch_size * kv_len * num_kv_heads * (head_dim_packed + scale_blocks)"),
            "baseline": NVFP4_DEQUANTIZE + "\n\n" + NVFP4_BASELINE,
        },
    }
    write(dirname, definition, workloads, custom=True)


nvfp4_decode("gqa_decode_nvfp4kv_q32_kv8_d128", 32, 8, 128, "Llama-3-8B", [
    {"batch_size": b, "kv_len": k} for b, k in
    [(1, 1), (1, 7), (8, 33), (16, 128), (32, 511), (64, 1000), (4, 2047), (8, 4096),
     (2, 8192)]])
