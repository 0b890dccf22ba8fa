// The ten views of a semantic tree (docs/sts-format.md; SPACE-2 §3.2): the one list that the
// tree score, the model's projection heads and the configs share. Torch- and Eigen-free.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace dialtree::sts {

/// The ten views, in SPACE-2's order: single levels, edges, 3-paths, the 4-path.
enum class View { D, I, S, V, DI, IS, SV, DIS, ISV, DISV };
inline constexpr std::size_t kNumViews = 10;

/// "D", "I", "S", "V", "DI", "IS", "SV", "DIS", "ISV", "DISV" (View order).
const std::array<std::string, kNumViews>& view_names();

/// The same names as a vector: the default of every `projection_views` setting.
const std::vector<std::string>& view_name_list();

/// The index in View order of the view called `name` ("SV" -> 6); nullopt for any other string.
std::optional<std::size_t> find_view(const std::string& name);

}  // namespace dialtree::sts
