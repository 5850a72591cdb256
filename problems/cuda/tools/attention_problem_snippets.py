"""Source snippets of the attention problems' references and baselines (assembled by gen.py)."""

HEADER = '''import math
import random
import zlib

import torch

LN2 = math.log(2.0)
'''

# ---- input generation (custom_inputs_entrypoint) ------------------------------------------

INPUT_HELPERS = '''

def workload_rng(axes):
    """A generator seeded by the workload's axes: every draw of one workload gets the same lengths
    and page table (the tensors' values come from torch's generator, which the oracle seeds)."""
    key = ",".join("%s=%d" % (name, axes[name]) for name in sorted(axes)
                   if isinstance(axes[name], int))
    return random.Random(zlib.crc32(key.encode()))


def split(total, parts, rng, low, spread, bare=0):
    """`parts` integers >= low that sum to `total`, their sizes spread over a factor of about
    exp(2 * spread) around the mean; `bare` of them (picked by rng, fewer than `parts`) get only
    `low`."""
    spare = total - low * parts
    if parts < 1 or spare < 0 or bare >= parts:
        raise ValueError("cannot split %d into %d parts of at least %d" % (total, parts, low))
    weights = [math.exp(rng.uniform(-spread, spread)) for _ in range(parts)]
    for i in rng.sample(range(parts), bare):
        weights[i] = 0.0
    scale = spare / sum(weights)
    sizes = [low + int(weight * scale) for weight in weights]
    grown = [i for i in range(parts) if weights[i] > 0.0]
    for i in range(total - sum(sizes)):  # what the rounding left, fewer than `parts`
        sizes[grown[i % len(grown)]] += 1
    return sizes


def indptr(sizes):
    offsets = [0]
    for size in sizes:
        offsets.append(offsets[-1] + size)
    return torch.tensor(offsets, dtype=torch.int32)


def page_table(used, num_pages, rng):
    """`used` distinct page ids of the cache's num_pages in shuffled order: a sequence's pages
    are scattered over the cache and the sequences' pages interleave."""
    if used > num_pages:
        raise ValueError("%d pages used but the cache holds %d" % (used, num_pages))
    ids = list(range(num_pages))
    rng.shuffle(ids)
    return torch.tensor(ids[:used], dtype=torch.int32)


def softmax_scale(batch, head_dim):
    """1/sqrt(head_dim), but 1/16 when the batch is odd, so that a kernel must read sm_scale;
    a float32 value, as a kernel receives it."""
    scale = head_dim ** -0.5 if batch % 2 == 0 else 0.0625
    return float(torch.tensor(scale, dtype=torch.float32))


def randn(shape, device):
    return torch.randn(shape, dtype=torch.bfloat16, device=device)
'''

MAKE_PAGED_DECODE = '''

def make_inputs(axes, device):
    """Page counts per sequence (at least one each, spread over a factor of about 20) that sum to
    num_kv_indices, pages drawn without repetition from the cache of num_pages in shuffled
    order, and random q and cache."""
    batch, page_size = axes["batch_size"], axes["page_size"]
    num_pages, used = axes["num_pages"], axes["num_kv_indices"]
    if axes["len_indptr"] != batch + 1:
        raise ValueError("len_indptr must be batch_size + 1")
    rng = workload_rng(axes)
    kv_indptr = indptr(split(used, batch, rng, 1, 1.5))
    kv_indices = page_table(used, num_pages, rng)
    head_dim = axes["head_dim"]
    cache = (num_pages, page_size, axes["num_kv_heads"], head_dim)
    inputs = {
        "q": randn((batch, axes["num_qo_heads"], head_dim), device),
        "k_cache": randn(cache, device),
        "v_cache": randn(cache, device),
        "kv_indptr": kv_indptr.to(device),
        "kv_indices": kv_indices.to(device),
    }
{last_page_len}    inputs["sm_scale"] = softmax_scale(batch, head_dim)
    return inputs
'''

MAKE_PAGED_PREFILL = '''

def make_inputs(axes, device):
    """Query counts per sequence (at least one each) that sum to total_q; each sequence's keys are
    its queries plus a cached prefix (none for a third of the sequences, rounded), the prefixes
    summing to num_kv_indices - total_q; pages (one token each) drawn without repetition from
    the cache of num_pages in shuffled order; random q and cache."""
    batch = axes["len_indptr"] - 1
    total_q, used, num_pages = axes["total_q"], axes["num_kv_indices"], axes["num_pages"]
    if axes["page_size"] != 1:
        raise ValueError("this generator makes one-token pages")
    rng = workload_rng(axes)
    q_lens = split(total_q, batch, rng, 1, 1.0)
    prefixes = split(used - total_q, batch, rng, 0, 1.0, bare=round(batch / 3))
    kv_indptr = indptr([q + p for q, p in zip(q_lens, prefixes)])
    kv_indices = page_table(used, num_pages, rng)
    head_dim = axes["head_dim"]
    cache = (num_pages, 1, axes["num_kv_heads"], head_dim)
    return {
        "q": randn((total_q, axes["num_qo_heads"], head_dim), device),
        "k_cache": randn(cache, device),
        "v_cache": randn(cache, device),
        "qo_indptr": indptr(q_lens).to(device),
        "kv_indptr": kv_indptr.to(device),
        "kv_indices": kv_indices.to(device),
        "sm_scale": softmax_scale(batch, head_dim),
    }
'''

MAKE_RAGGED_PREFILL = '''

def make_inputs(axes, device):
    """Query counts per sequence (at least one each) that sum to total_q; each sequence's keys are
    its queries plus a prefix (none for a third of the sequences, rounded), the prefixes summing
    to total_kv - total_q; random q, k and v."""
    batch = axes["len_indptr"] - 1
    total_q, total_kv = axes["total_q"], axes["total_kv"]
    rng = workload_rng(axes)
    q_lens = split(total_q, batch, rng, 1, 1.0)
    prefixes = split(total_kv - total_q, batch, rng, 0, 1.0, bare=round(batch / 3))
    head_dim, kv_heads = axes["head_dim"], axes["num_kv_heads"]
    return {
        "q": randn((total_q, axes["num_qo_heads"], head_dim), device),
        "k": randn((total_kv, kv_heads, head_dim), device),
        "v": randn((total_kv, kv_heads, head_dim), device),
        "qo_indptr": indptr(q_lens).to(device),
        "kv_indptr": indptr([q + p for q, p in zip(q_lens, prefixes)]).to(device),
        "sm_scale": softmax_scale(batch, head_dim),
    }
'''

# ---- the reference ----------------------------------------------------------------------

ATTEND = '''

def attend(q, k, v, scale, causal):
    """Attention of one sequence in float32: q [Lq, Hq, D], k and v [Lkv, Hkv, D]; query head h
    reads key/value head h // (Hq // Hkv). Causal masking is aligned to the bottom right: query i
    sees keys j <= i + Lkv - Lq. Returns the output [Lq, Hq, D] and the base-2 log-sum-exp of
    the scaled logits [Lq, Hq]; a query that sees no key gets zeros and -inf."""
    q_len, q_heads, head_dim = q.shape
    kv_len, kv_heads = k.shape[0], k.shape[1]
    group = q_heads // kv_heads
    qg = q.float().reshape(q_len, kv_heads, group, head_dim).permute(1, 2, 0, 3)
    scores = torch.matmul(qg, k.float().permute(1, 2, 0).unsqueeze(1)) * scale
    if causal:
        rows = torch.arange(q_len, device=q.device).unsqueeze(1)
        cols = torch.arange(kv_len, device=q.device).unsqueeze(0)
        scores.masked_fill_(cols > rows + (kv_len - q_len), float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)  # [Hkv, G, Lq]
    probs = torch.softmax(scores, dim=-1)
    seen = torch.isfinite(lse).unsqueeze(-1)
    probs.masked_fill_(~seen, 0.0)
    out = torch.matmul(probs, v.float().permute(1, 0, 2).unsqueeze(1))  # [Hkv, G, Lq, D]
    out = out.permute(2, 0, 1, 3).reshape(q_len, q_heads, head_dim)
    return out, (lse / LN2).permute(2, 0, 1).reshape(q_len, q_heads)


def gather(cache, pages, length):
    """The first `length` tokens of the pages `pages` of cache [num_pages, page_size, H, D]."""
    rows = cache[pages.long()]
    return rows.reshape(-1, cache.shape[2], cache.shape[3])[:length]
'''

RUN_PAGED_DECODE = '''

@torch.no_grad()
def run(q, k_cache, v_cache, kv_indptr, kv_indices, {last}sm_scale):
    batch, q_heads, head_dim = q.shape
    page_size = k_cache.shape[1]
    output = torch.zeros_like(q)
    lse = torch.full((batch, q_heads), float("-inf"), dtype=torch.float32, device=q.device)
    offsets = kv_indptr.tolist()
    {fill}
    for b in range(batch):
        pages = kv_indices[offsets[b]:offsets[b + 1]]
        if pages.numel() == 0:
            continue
        length = (pages.numel() - 1) * page_size + fills[b]
        o, l = attend(q[b:b + 1], gather(k_cache, pages, length), gather(v_cache, pages, length),
                      sm_scale, causal=False)
        output[b] = o[0].to(q.dtype)
        lse[b] = l[0]
    return output, lse
'''

RUN_PAGED_PREFILL = '''

@torch.no_grad()
def run(q, k_cache, v_cache, qo_indptr, kv_indptr, kv_indices, sm_scale):
    page_size = k_cache.shape[1]
    output = torch.zeros_like(q)
    lse = torch.full(q.shape[:2], float("-inf"), dtype=torch.float32, device=q.device)
    qo, kv = qo_indptr.tolist(), kv_indptr.tolist()
    for b in range(len(qo) - 1):
        pages = kv_indices[kv[b]:kv[b + 1]]
        length = pages.numel() * page_size  # every page is full
        if qo[b] == qo[b + 1] or length == 0:
            continue
        o, l = attend(q[qo[b]:qo[b + 1]], gather(k_cache, pages, length),
                      gather(v_cache, pages, length), sm_scale, causal=True)
        output[qo[b]:qo[b + 1]] = o.to(q.dtype)
        lse[qo[b]:qo[b + 1]] = l
    return output, lse
'''

RUN_RAGGED_PREFILL = '''

@torch.no_grad()
def run(q, k, v, qo_indptr, kv_indptr, sm_scale):
    output = torch.zeros_like(q)
    lse = torch.full(q.shape[:2], float("-inf"), dtype=torch.float32, device=q.device)
    qo, kv = qo_indptr.tolist(), kv_indptr.tolist()
    for b in range(len(qo) - 1):
        if qo[b] == qo[b + 1] or kv[b] == kv[b + 1]:
            continue
        o, l = attend(q[qo[b]:qo[b + 1]], k[kv[b]:kv[b + 1]], v[kv[b]:kv[b + 1]], sm_scale,
                      causal=True)
        output[qo[b]:qo[b + 1]] = o.to(q.dtype)
        lse[qo[b]:qo[b + 1]] = l
    return output, lse
'''

RUN_DENSE = '''

@torch.no_grad()
def run(q, k, v):
    """q [B, Hq, Sq, D], k and v [B, Hkv, Skv, D]; one batch entry at a time to bound memory."""
    output = torch.empty_like(q)
    scale = q.shape[-1] ** -0.5
    for b in range(q.shape[0]):
        o, _ = attend(q[b].transpose(0, 1), k[b].transpose(0, 1), v[b].transpose(0, 1), scale,
                      causal=CAUSAL)
        output[b] = o.transpose(0, 1).to(q.dtype)
    return output
'''

# ---- baselines --------------------------------------------------------------------------

BASE_PAGED_DECODE = '''import math

import torch

LOG2E = 1.0 / math.log(2.0)


@torch.no_grad()
def run(q, k_cache, v_cache, kv_indptr, kv_indices, {last}sm_scale):
    # The PyTorch gather reference: every sequence's pages gathered into one padded dense batch,
    # then attention in bfloat16 with a float32 softmax. Written out rather than
    # F.scaled_dot_product_attention, which cannot return the log-sum-exp.
    batch, q_heads, head_dim = q.shape
    page_size, kv_heads = k_cache.shape[1], k_cache.shape[2]
    pages = (kv_indptr[1:] - kv_indptr[:-1]).long()
    lengths = {lengths}
    max_len = int(lengths.max())
    pos = torch.arange(max_len, device=q.device)
    valid = pos.unsqueeze(0) < lengths.unsqueeze(1)  # [B, L]
    slot = kv_indptr[:-1].long().unsqueeze(1) + torch.div(pos, page_size, rounding_mode="floor")
    page = kv_indices.long()[slot.clamp(max=kv_indices.numel() - 1)]
    keys = k_cache[page, pos % page_size]  # [B, L, Hkv, D]
    values = v_cache[page, pos % page_size]
    qg = q.view(batch, kv_heads, q_heads // kv_heads, head_dim)
    scores = torch.matmul(qg, keys.permute(0, 2, 3, 1)).float() * sm_scale  # [B, Hkv, G, L]
    scores.masked_fill_(~valid[:, None, None, :], float("-inf"))
    lse = torch.logsumexp(scores, dim=-1) * LOG2E
    probs = torch.softmax(scores, dim=-1).to(q.dtype)
    out = torch.matmul(probs, values.permute(0, 2, 1, 3))  # [B, Hkv, G, D]
    return out.reshape(batch, q_heads, head_dim), lse.reshape(batch, q_heads)
'''

FLASH_NOTE = '''    # Per sequence, the flash-attention kernel that F.scaled_dot_product_attention dispatches to
    # on the H200, called as its aten op because only that returns the log-sum-exp (natural log,
    # [1, Hq, Lq]); it takes grouped key/value heads as they are, and its causal mask is aligned
    # to the bottom right when Lkv > Lq (FlashAttention-2's convention, which is why
    # torch.nn.attention.bias.causal_lower_right dispatches to it).
'''

BASE_PAGED_PREFILL = '''import math

import torch

LOG2E = 1.0 / math.log(2.0)


@torch.no_grad()
def run(q, k_cache, v_cache, qo_indptr, kv_indptr, kv_indices, sm_scale):
    # The PyTorch gather reference: each sequence's pages gathered into dense keys and values.
''' + FLASH_NOTE + '''    kv_heads, head_dim = k_cache.shape[2], k_cache.shape[3]
    keys = k_cache.view(-1, kv_heads, head_dim)  # one token per page
    values = v_cache.view(-1, kv_heads, head_dim)
    output = torch.empty_like(q)
    lse = torch.empty(q.shape[:2], dtype=torch.float32, device=q.device)
    qo, kv = qo_indptr.tolist(), kv_indptr.tolist()
    for b in range(len(qo) - 1):
        pages = kv_indices[kv[b]:kv[b + 1]].long()
        qb = q[qo[b]:qo[b + 1]].transpose(0, 1).unsqueeze(0)
        kb = keys.index_select(0, pages).transpose(0, 1).unsqueeze(0)
        vb = values.index_select(0, pages).transpose(0, 1).unsqueeze(0)
        o, l = torch.ops.aten._scaled_dot_product_flash_attention(
            qb, kb, vb, 0.0, True, False, scale=sm_scale)[:2]
        output[qo[b]:qo[b + 1]] = o[0].transpose(0, 1)
        lse[qo[b]:qo[b + 1]] = l[0, :, :qb.shape[2]].transpose(0, 1) * LOG2E
    return output, lse
'''

BASE_RAGGED_PREFILL = '''import math

import torch

LOG2E = 1.0 / math.log(2.0)


@torch.no_grad()
def run(q, k, v, qo_indptr, kv_indptr, sm_scale):
''' + FLASH_NOTE + '''    output = torch.empty_like(q)
    lse = torch.empty(q.shape[:2], dtype=torch.float32, device=q.device)
    qo, kv = qo_indptr.tolist(), kv_indptr.tolist()
    for b in range(len(qo) - 1):
        qb = q[qo[b]:qo[b + 1]].transpose(0, 1).unsqueeze(0)
        kb = k[kv[b]:kv[b + 1]].transpose(0, 1).unsqueeze(0)
        vb = v[kv[b]:kv[b + 1]].transpose(0, 1).unsqueeze(0)
        o, l = torch.ops.aten._scaled_dot_product_flash_attention(
            qb, kb, vb, 0.0, True, False, scale=sm_scale)[:2]
        output[qo[b]:qo[b + 1]] = o[0].transpose(0, 1)
        lse[qo[b]:qo[b + 1]] = l[0, :, :qb.shape[2]].transpose(0, 1) * LOG2E
    return output, lse
'''

BASE_DENSE = '''import torch
import torch.nn.functional as F


@torch.no_grad()
def run(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal={causal}, enable_gqa=True)
'''

LAST_PAGE_LEN_INPUT = '''    # The last page's fill cycles through 1..page_size over the sequences (7 is coprime to the
    # page size), offset by the page count: 1 for one sequence on one page.
    fill = [1 + (7 * b + used - 1) % page_size for b in range(batch)]
    inputs["kv_last_page_len"] = torch.tensor(fill, dtype=torch.int32, device=device)
'''
