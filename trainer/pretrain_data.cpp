#include "trainer/pretrain_data.h"

#include <map>
#include <optional>
#include <stdexcept>
#include <unordered_map>

#include "common/join.h"
#include "data/masking.h"
#include "sts/convert.h"
#include "sts/format.h"
#include "sts/views.h"

namespace dialtree::trainer {

namespace {
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
// Per token of `turn`'s ids, the id of the slot whose mention covers it (kNoSlot outside every
// mention; the first slot in byte order where mentions overlap); new slot names get the next id
// in `slot_id`. `turn` has a label.
std::vector<std::int32_t> slot_ids_of_turn(const sts::Turn& turn, const data::Tokenizer& tokenizer,
                                           std::map<std::string, std::int32_t>& slot_id) {
  std::vector<std::int32_t> ids;
  for (const auto& [slot, spans] : data::label_mention_spans_by_slot(turn.text, *turn.label)) {
    const std::int32_t id =
        slot_id.emplace(slot, static_cast<std::int32_t>(slot_id.size())).first->second;
    const std::vector<std::uint8_t> flags = data::value_span_flags(tokenizer, turn.text, spans);
    if (ids.empty()) ids.assign(flags.size(), kNoSlot);
    for (std::size_t i = 0; i < flags.size(); ++i) {
      if (flags[i] != 0 && ids[i] == kNoSlot) ids[i] = id;
    }
  }
  return ids;
}

}  // namespace

std::vector<PretrainDataset> load_pretrain_data(const std::vector<std::string>& files,
                                                bool labelled, const data::Tokenizer& tokenizer,
                                                const data::SerializeOptions& options,
                                                PretrainDataSkips* skipped, bool slot_ids) {
  PretrainDataSkips skips;
  std::map<std::string, PretrainDataset> by_source;
  std::map<std::string, std::int32_t> slot_id;  // slot name -> id, by first appearance
  auto add_dialog = [&](const sts::Dialog& dialog) {
    sts::Dialog kept{dialog.id, dialog.source, {}};
    kept.turns.reserve(dialog.turns.size());
    for (const sts::Turn& t : dialog.turns) {
      if (!t.text.empty()) kept.turns.push_back(t);
    }
    skips.turns += dialog.turns.size() - kept.turns.size();
    if (kept.turns.empty()) {
      ++skips.dialogs;
      return;
    }
    PretrainDataset& ds = by_source[dialog.source];
    ds.name = dialog.source;
    // Value-mention flags of every turn, when any turn of the dialog mentions a value.
    std::vector<std::vector<std::uint8_t>> turn_flags;
    std::vector<std::vector<std::int32_t>> turn_slots;  // with slot_ids: slot_ids_of_turn()
    if (labelled) {
      bool any = false;
      std::vector<std::vector<data::CharSpan>> spans(kept.turns.size());
      for (std::size_t t = 0; t < kept.turns.size(); ++t) {
        if (kept.turns[t].label) {
          spans[t] = data::label_mention_spans(kept.turns[t].text, *kept.turns[t].label);
        }
        any = any || !spans[t].empty();
      }
      if (any) {
        for (std::size_t t = 0; t < kept.turns.size(); ++t) {
          turn_flags.push_back(data::value_span_flags(tokenizer, kept.turns[t].text, spans[t]));
        }
      }
      if (any && slot_ids) {
        for (std::size_t t = 0; t < kept.turns.size(); ++t) {
          turn_slots.push_back(spans[t].empty()
                                   ? std::vector<std::int32_t>(turn_flags[t].size(), kNoSlot)
                                   : slot_ids_of_turn(kept.turns[t], tokenizer, slot_id));
        }
      }
    }
    for (data::SerializedExample& ex : data::serialize_dialog(kept, tokenizer, options)) {
      PretrainExample pe;
      if (labelled) {
        const auto& label = kept.turns[ex.turn_index].label;
        pe.views = sts::view_sets(label ? *label : sts::Tree{});
        if (!turn_flags.empty()) {
          std::vector<std::vector<std::uint8_t>> history(turn_flags.begin(),
                                                         turn_flags.begin() + ex.turn_index + 1);
          pe.span_flags = data::context_span_flags(history, options);
          bool any = false;
          for (auto f : pe.span_flags) any = any || f;
          if (!any) pe.span_flags.clear();
          if (any && !turn_slots.empty()) {
            const std::vector<std::vector<std::int32_t>> slots(
                turn_slots.begin(), turn_slots.begin() + ex.turn_index + 1);
            pe.span_slots = data::context_token_labels(slots, options, kNoSlot);
          }
        }
      }
      pe.tokens = std::move(ex);
      ds.examples.push_back(std::move(pe));
    }
  };
  for (const std::string& file : files) {
    if (ends_with(file, ".txt")) {
      for (const sts::Dialog& d : sts::convert(sts::SourceFormat::Text, file)) add_dialog(d);
    } else {
      sts::for_each_dialog(file, [&](sts::Dialog&& d) { add_dialog(d); });
    }
  }
  if (skipped) *skipped = skips;
  std::vector<PretrainDataset> out;
  out.reserve(by_source.size());
  for (auto& [name, ds] : by_source) {
    if (!ds.examples.empty()) out.push_back(std::move(ds));
  }
  return out;
}

data::SerializeOptions serialize_options(const DataConfig& d) {
  data::SerializeOptions o;
  o.max_len = static_cast<std::size_t>(d.max_len);
  o.max_utt_len = static_cast<std::size_t>(d.max_utt_len);
  o.max_ctx_turn = static_cast<std::size_t>(d.max_ctx_turn);
  o.trigger_role = d.trigger_role;
  return o;
}

std::vector<std::size_t> dataset_sizes(const std::vector<PretrainDataset>& datasets) {
  std::vector<std::size_t> sizes;
  sizes.reserve(datasets.size());
  for (const auto& d : datasets) sizes.push_back(d.examples.size());
  return sizes;
}

Grouping view_grouping(const std::vector<PretrainDataset>& datasets, const std::string& view,
                       std::size_t group_size) {
  Grouping g;
  if (view.empty() || group_size < 2) return g;
  const std::optional<std::size_t> k = sts::find_view(view);
  if (!k) {
    throw std::invalid_argument("view_grouping: unknown view '" + view + "' (" +
                                join(sts::view_name_list()) + ")");
  }
  std::unordered_map<std::string, std::uint32_t> ids;
  g.group_size = group_size;
  g.keys.reserve(datasets.size());
  for (const auto& ds : datasets) {
    auto& keys = g.keys.emplace_back();
    keys.reserve(ds.examples.size());
    for (const auto& ex : ds.examples) {
      auto& mine = keys.emplace_back();
      for (const std::string& element : ex.views.sets[*k]) {
        mine.push_back(ids.emplace(element, static_cast<std::uint32_t>(ids.size())).first->second);
      }
    }
  }
  return g;
}

Grouping view_grouping(const std::vector<PretrainDataset>& datasets, const DataConfig& d) {
  return view_grouping(datasets, d.group_by_view, static_cast<std::size_t>(d.group_size));
}

std::string batch_grouping_name(const DataConfig& d) {
  return d.group_by_view.empty() ? std::string()
                                 : d.group_by_view + "/" + std::to_string(d.group_size);
}

}  // namespace dialtree::trainer
