#include "ops/schemas/einsum_plan.h"

#include <algorithm>
#include <array>

namespace frame::ops {
namespace {

constexpr int kNumLetters = 52;  // a-z then A-Z; ellipsis dims get ids from 52 on

char letter_char(int id) {
  return id < 26 ? static_cast<char>('a' + id) : static_cast<char>('A' + id - 26);
}

int letter_id(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  return -1;
}

// One term: letter ids with -2 marking where the ellipsis sits.
Result<std::vector<int>> parse_term(const NodeContext& ctx, std::string_view t) {
  std::vector<int> out;
  bool ellipsis = false;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '.') {
      if (ellipsis || t.substr(i, 3) != "...") {
        return ctx.error("equation term '{}' has a malformed or repeated ellipsis", t);
      }
      ellipsis = true;
      out.push_back(-2);
      i += 2;
      continue;
    }
    const int id = letter_id(t[i]);
    if (id < 0) return ctx.error("equation term '{}' has invalid character '{}'", t, t[i]);
    out.push_back(id);
  }
  return out;
}

}  // namespace

Result<EinsumPlan> plan_einsum(const NodeContext& ctx, std::string_view equation,
                               std::span<const Shape> shapes) {
  std::string eq;
  for (char c : equation) {
    if (c != ' ') eq.push_back(c);
  }
  std::string lhs = eq, rhs;
  const size_t arrow = eq.find("->");
  const bool explicit_out = arrow != std::string::npos;
  if (explicit_out) {
    lhs = eq.substr(0, arrow);
    rhs = eq.substr(arrow + 2);
  }
  std::vector<std::vector<int>> terms;
  size_t start = 0;
  for (;;) {
    const size_t comma = lhs.find(',', start);
    FRAME_ASSIGN_OR_RETURN(std::vector<int> t,
                           parse_term(ctx, std::string_view(lhs).substr(
                                               start, comma == std::string::npos ? std::string::npos
                                                                                 : comma - start)));
    terms.push_back(std::move(t));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != shapes.size()) {
    return ctx.error("equation '{}' has {} input terms, but the node has {} inputs", equation,
                     terms.size(), shapes.size());
  }
  // Ellipsis rank = the largest number of dims any term's ellipsis covers.
  int64_t ell_rank = 0;
  std::vector<int64_t> ell_of(terms.size(), 0);
  for (size_t i = 0; i < terms.size(); ++i) {
    const bool has_ell = std::count(terms[i].begin(), terms[i].end(), -2) > 0;
    const int64_t letters = static_cast<int64_t>(terms[i].size()) - (has_ell ? 1 : 0);
    const int64_t rank = static_cast<int64_t>(shapes[i].size());
    if (has_ell ? rank < letters : rank != letters) {
      return ctx.error("input {} has rank {}, but equation term {} has {} subscripts{}", i, rank, i,
                       letters, has_ell ? " plus an ellipsis" : "");
    }
    ell_of[i] = rank - letters;
    ell_rank = std::max(ell_rank, ell_of[i]);
  }
  EinsumPlan p;
  const size_t nl = static_cast<size_t>(kNumLetters + ell_rank);
  p.label_size.assign(nl, -1);
  p.label_strides.assign(terms.size(), std::vector<int64_t>(nl, 0));
  p.input_labels.assign(terms.size(), {});
  std::array<int, kNumLetters> count{};
  for (size_t i = 0; i < terms.size(); ++i) {
    const std::vector<int64_t> strides = contiguous_strides(shapes[i]);
    size_t dim = 0;
    for (int id : terms[i]) {
      if (id == -2) {
        for (int64_t e = 0; e < ell_of[i]; ++e, ++dim) {
          const size_t label = static_cast<size_t>(kNumLetters + ell_rank - ell_of[i] + e);
          const int64_t d = shapes[i][dim];
          int64_t& size = p.label_size[label];
          if (size == -1 || size == 1) {
            size = d;
          } else if (d != 1 && d != size) {
            return ctx.error("input {} dim {} ({}) does not broadcast with {} in the ellipsis", i,
                             dim, d, size);
          }
          if (d != 1) p.label_strides[i][label] += strides[dim];
          p.input_labels[i].push_back(static_cast<int>(label));
        }
        continue;
      }
      const int64_t d = shapes[i][dim];
      int64_t& size = p.label_size[static_cast<size_t>(id)];
      if (size != -1 && size != d) {
        return ctx.error("subscript '{}' has extent {} in input {} dim {}, but {} elsewhere",
                         letter_char(id), d, i, dim, size);
      }
      size = d;
      p.label_strides[i][static_cast<size_t>(id)] += strides[dim];
      p.input_labels[i].push_back(id);
      ++count[static_cast<size_t>(id)];
      ++dim;
    }
  }
  std::vector<bool> in_out(nl, false);
  if (explicit_out) {
    FRAME_ASSIGN_OR_RETURN(std::vector<int> out, parse_term(ctx, rhs));
    for (int id : out) {
      if (id == -2) {
        for (int64_t e = 0; e < ell_rank; ++e) {
          p.out_labels.push_back(static_cast<int>(kNumLetters + e));
        }
        continue;
      }
      if (p.label_size[static_cast<size_t>(id)] == -1) {
        return ctx.error("output subscript '{}' does not appear in any input", letter_char(id));
      }
      if (in_out[static_cast<size_t>(id)]) {
        return ctx.error("output subscript '{}' is repeated", letter_char(id));
      }
      in_out[static_cast<size_t>(id)] = true;
      p.out_labels.push_back(id);
    }
  } else {
    for (int64_t e = 0; e < ell_rank; ++e)
      p.out_labels.push_back(static_cast<int>(kNumLetters + e));
    // ASCII order puts upper case (ids 26..51) before lower case (ids 0..25).
    for (int id = 26; id < kNumLetters; ++id) {
      if (count[static_cast<size_t>(id)] == 1) p.out_labels.push_back(id);
    }
    for (int id = 0; id < 26; ++id) {
      if (count[static_cast<size_t>(id)] == 1) p.out_labels.push_back(id);
    }
  }
  for (int l : p.out_labels) in_out[static_cast<size_t>(l)] = true;
  for (size_t l = 0; l < nl; ++l) {
    if (p.label_size[l] == -1) p.label_size[l] = 1;  // unused letter: a loop of one
    const bool used = l >= static_cast<size_t>(kNumLetters) || count[l] > 0;
    if (used && !in_out[l]) p.sum_labels.push_back(static_cast<int>(l));
  }
  for (int l : p.out_labels) p.out_shape.push_back(p.label_size[static_cast<size_t>(l)]);
  return p;
}

}  // namespace frame::ops
