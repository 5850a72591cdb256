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
