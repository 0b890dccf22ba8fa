#include "common/device_spec.h"

#include <cctype>

namespace dialtree {

std::optional<DeviceSpec> parse_device_spec(const std::string& text) {
  if (text == "auto") return DeviceSpec{DeviceSpec::Kind::Auto, std::nullopt};
  if (text == "cpu") return DeviceSpec{DeviceSpec::Kind::Cpu, std::nullopt};
  if (text == "cuda") return DeviceSpec{DeviceSpec::Kind::Cuda, std::nullopt};
  const std::string prefix = "cuda:";
  if (text.size() <= prefix.size() || text.compare(0, prefix.size(), prefix) != 0)
    return std::nullopt;
  const std::string digits = text.substr(prefix.size());
  // A decimal ordinal without sign or leading zeros ("cuda:01" is a typo, not device 1).
  if (digits.size() > 4 || (digits.size() > 1 && digits[0] == '0')) return std::nullopt;
  int n = 0;
  for (char c : digits) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    n = n * 10 + (c - '0');
  }
  if (n >= 1024) return std::nullopt;
  return DeviceSpec{DeviceSpec::Kind::Cuda, n};
}

std::string device_spec_problem(const std::string& text) {
  if (parse_device_spec(text)) return "";
  return "\"" + text + "\" is not a device: use auto, cpu, cuda or cuda:N (N = 0, 1, ...)";
}

std::string to_string(const DeviceSpec& spec) {
  switch (spec.kind) {
    case DeviceSpec::Kind::Auto:
      return "auto";
    case DeviceSpec::Kind::Cpu:
      return "cpu";
    case DeviceSpec::Kind::Cuda:
      return spec.index ? "cuda:" + std::to_string(*spec.index) : "cuda";
  }
  return "cpu";
}

}  // namespace dialtree
