// The spelling of a compute device, as the training config's `device:` key, `--device` and
// DIALTREE_DEVICE accept it (docs/gpu.md "Choosing the device"): auto, cpu, cuda or cuda:N.
// Parsing is torch-free so that the config readers and the guard build check it without
// LibTorch; model/device.h turns a parsed spec into a torch::Device on the running machine.
#pragma once

#include <optional>
#include <string>

namespace dialtree {

/// The help text of every `--device` flag (embed, serve, eval dialoglue, eval probe); each has
/// the environment twin DIALTREE_DEVICE.
inline constexpr const char* kDeviceHelp =
    "Where the model runs: auto (the first GPU LibTorch sees, else the CPU), cpu, cuda or cuda:N";

/// A parsed device spelling.
struct DeviceSpec {
  enum class Kind { Auto, Cpu, Cuda };
  Kind kind = Kind::Cpu;
  /// The CUDA ordinal of "cuda:N"; nullopt for "cuda" (the current device, 0 unless changed),
  /// "cpu" and "auto".
  std::optional<int> index;
};

/// Parses "auto", "cpu", "cuda" or "cuda:N" (N a decimal ordinal, 0 <= N < 1024), exactly so:
/// no surrounding blanks, lower case. Returns nullopt for anything else; device_spec_problem()
/// says why.
std::optional<DeviceSpec> parse_device_spec(const std::string& text);

/// Empty when parse_device_spec(text) succeeds, else one sentence for an error message, e.g.
/// "\"gpu\" is not a device: use auto, cpu, cuda or cuda:N".
std::string device_spec_problem(const std::string& text);

/// The canonical spelling: "auto", "cpu", "cuda" or "cuda:N".
std::string to_string(const DeviceSpec& spec);

}  // namespace dialtree
