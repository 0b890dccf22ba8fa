// Rendering a figure (plot/figures.h) to PNG and SVG files with gnuplot, run as a child process
// on a generated script (docs/plotting.md). Torch-free.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "plot/figures.h"

namespace dialtree::plot {

/// Output formats and the program that draws.
struct RenderOptions {
  bool png = true;
  bool svg = true;
  std::string gnuplot = "gnuplot";  ///< looked up on PATH unless it holds a '/'
};

/// What rendering one figure produced.
struct Rendered {
  std::vector<std::filesystem::path> files;  ///< out_dir/<name>.png, .svg as requested
  std::string warnings;                      ///< what gnuplot printed although it succeeded
};

/// The full gnuplot program for `figure` in the formats of `options`: for each format, `set
/// terminal` (pngcairo where `pngcairo`, else png; svg), `set output '<name>.<ext>'`, then the
/// figure's script. Paths in it are relative to the folder it runs in.
std::string gnuplot_program(const Figure& figure, const RenderOptions& options, bool pngcairo);

/// True if `program` knows the pngcairo terminal (Debian's gnuplot-nox does; a build without
/// cairo falls back to the libgd png terminal). Runs the program once.
bool has_pngcairo(const std::string& program);

/// Writes the figure's data files and program into a fresh hidden folder inside `out_dir`
/// (created if needed), runs gnuplot there, and renames the images into `out_dir` (replacing
/// older ones); the folder is removed in every case.
/// @throws std::runtime_error naming the program and the Debian package (gnuplot-nox) when it is
///   not installed; with gnuplot's exit status and everything it printed when it fails or writes
///   no image; naming the path when a file cannot be written.
Rendered render(const Figure& figure, const std::filesystem::path& out_dir,
                const RenderOptions& options);

}  // namespace dialtree::plot
