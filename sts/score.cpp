#include "sts/score.h"

#include <algorithm>
#include <iterator>

#include <utf8proc.h>

#include "common/utf8.h"

namespace dialtree::sts {

namespace {

bool is_space(char32_t c) {
  if (c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F) || c == 0x85) return true;
  auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL || cat == UTF8PROC_CATEGORY_ZP;
}

// Python's s.strip().lower() (docs/method.md §3.1), per code point.
std::string clean(const std::string& s) {
  std::u32string cps = utf8::decode(s);
  std::size_t b = 0, e = cps.size();
  while (b < e && is_space(cps[b])) ++b;
  while (e > b && is_space(cps[e - 1])) --e;
  std::string out;
  out.reserve(e - b);
  for (std::size_t i = b; i < e; ++i) {
    utf8::append(out,
                 static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cps[i]))));
  }
  return out;
}

bool is_placeholder(const std::string& cleaned) {
  return cleaned.find("default_domain") != std::string::npos ||
         cleaned.find("default_intent") != std::string::npos;
}

void add(std::vector<std::string>& set, std::string element) {
  if (!is_placeholder(element)) set.push_back(std::move(element));
}

void sort_unique(std::vector<std::string>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

// |A ∩ B| of two sorted unique vectors.
std::size_t intersection_size(const std::vector<std::string>& a,
                              const std::vector<std::string>& b) {
  std::size_t n = 0;
  auto i = a.begin(), j = b.begin();
  while (i != a.end() && j != b.end()) {
    int c = i->compare(*j);
    if (c == 0) {
      ++n, ++i, ++j;
    } else if (c < 0) {
      ++i;
    } else {
      ++j;
    }
  }
  return n;
}

}  // namespace

ViewSets view_sets(const Tree& raw) {
  const Tree tree = fix_up(raw);
  ViewSets vs;
  vs.empty_tree = tree.empty();
  auto& s = vs.sets;
  const char sep = '\x1f';  // canonical-form separator, never part of a cleaned name
  for (const auto& [d0, intents] : tree.domains) {
    const std::string d = clean(d0);
    add(s[static_cast<int>(View::D)], d);
    if (intents.empty()) vs.canonical.push_back(d);
    for (const auto& [i0, slots] : intents) {
      const std::string i = clean(i0);
      add(s[static_cast<int>(View::I)], i);
      add(s[static_cast<int>(View::DI)], d + "-" + i);
      if (slots.empty()) vs.canonical.push_back(d + sep + i);
      for (const auto& [s0, values] : slots) {
        const std::string sl = clean(s0);
        add(s[static_cast<int>(View::S)], sl);
        add(s[static_cast<int>(View::IS)], i + "-" + sl);
        add(s[static_cast<int>(View::DIS)], d + "-" + i + "-" + sl);
        if (values.empty()) vs.canonical.push_back(d + sep + i + sep + sl);
        for (const Value& v0 : values) {
          const std::string v = clean(v0.value);
          add(s[static_cast<int>(View::V)], v);
          add(s[static_cast<int>(View::SV)], sl + "-" + v);
          add(s[static_cast<int>(View::ISV)], i + "-" + sl + "-" + v);
          add(s[static_cast<int>(View::DISV)], d + "-" + i + "-" + sl + "-" + v);
          vs.canonical.push_back(d + sep + i + sep + sl + sep + v);
        }
      }
    }
  }
  for (auto& set : s) sort_unique(set);
  sort_unique(vs.canonical);
  return vs;
}

ViewScores score_views(const ViewSets& a, const ViewSets& b) {
  ViewScores out;
  if (a.empty_tree || b.empty_tree) return out;
  for (std::size_t k = 0; k < kNumViews; ++k) {
    const std::size_t inter = intersection_size(a.sets[k], b.sets[k]);
    const std::size_t uni = a.sets[k].size() + b.sets[k].size() - inter;
    out.defined[k] = uni > 0;
    out.jaccard[k] = uni > 0 ? static_cast<double>(inter) / static_cast<double>(uni) : 0.0;
  }
  return out;
}

ViewScores score_views(const Tree& a, const Tree& b) {
  return score_views(view_sets(a), view_sets(b));
}

double combined_score(const ViewSets& a, const ViewSets& b) {
  if (a.empty_tree || b.empty_tree) return 0.0;
  if (a.canonical == b.canonical) return 1.0;
  const ViewScores vs = score_views(a, b);
  double sum = 0.0;
  int n = 0;
  for (std::size_t k = 0; k < kNumViews; ++k) {
    if (vs.defined[k]) sum += vs.jaccard[k], ++n;
  }
  return n ? sum / n : 0.0;
}

double combined_score(const Tree& a, const Tree& b) {
  return combined_score(view_sets(a), view_sets(b));
}

BatchScores batch_scores(const std::vector<ViewSets>& trees) {
  const Eigen::Index n = static_cast<Eigen::Index>(trees.size());
  BatchScores out;
  for (auto& m : out.views) m = ScoreMatrix::Identity(n, n);
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index j = i + 1; j < n; ++j) {
      const ViewScores vs = score_views(trees[i], trees[j]);
      for (std::size_t k = 0; k < kNumViews; ++k) {
        const float v = static_cast<float>(vs.jaccard[k]);
        out.views[k](i, j) = v;
        out.views[k](j, i) = v;
      }
    }
  }
  return out;
}

BatchScores batch_scores(const std::vector<Tree>& trees) {
  std::vector<ViewSets> sets;
  sets.reserve(trees.size());
  for (const Tree& t : trees) sets.push_back(view_sets(t));
  return batch_scores(sets);
}

std::vector<float> BatchScores::to_bbk() const {
  const std::size_t b = batch_size();
  std::vector<float> out(b * b * kNumViews);
  for (std::size_t i = 0; i < b; ++i) {
    for (std::size_t j = 0; j < b; ++j) {
      for (std::size_t k = 0; k < kNumViews; ++k) {
        out[(i * b + j) * kNumViews + k] =
            views[k](static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j));
      }
    }
  }
  return out;
}

ScoreMatrix batch_combined(const std::vector<ViewSets>& trees) {
  const Eigen::Index n = static_cast<Eigen::Index>(trees.size());
  ScoreMatrix m = ScoreMatrix::Identity(n, n);
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index j = i + 1; j < n; ++j) {
      const float v = static_cast<float>(combined_score(trees[i], trees[j]));
      m(i, j) = v;
      m(j, i) = v;
    }
  }
  return m;
}

}  // namespace dialtree::sts
