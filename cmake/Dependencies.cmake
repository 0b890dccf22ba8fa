# All third-party dependencies come from Debian 12 packages, except SentencePiece, which
# scripts/build-sentencepiece.sh rebuilds from Debian's own source package against the system
# protobuf (docs/build.md P3): Debian's libsentencepiece bundles protobuf-lite 3.14 and crashes any
# process that also loads LibTorch (protobuf 3.21).

find_package(nlohmann_json 3 REQUIRED)
find_package(simdjson 3 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(Eigen3 3.4 REQUIRED NO_MODULE)
find_package(yaml-cpp REQUIRED)
find_package(spdlog REQUIRED)
find_package(fmt REQUIRED)
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
# Boost.Beast and Boost.Asio (header-only in Boost 1.74): the server's event-driven HTTP layer.
find_package(Boost 1.74 REQUIRED)
# cpp-httplib: an HTTP *client* only, for the server tests and the load benchmark.
pkg_check_modules(CPP_HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)
# jemalloc, linked into the dialtree executable (and bench_embed, its offline reference) as the
# process's malloc: under the server's mix of tensor shapes glibc's heap kept growing (+85 MiB
# over 20k requests); jemalloc stays flat at the same throughput (bench/README.md, server).
pkg_check_modules(JEMALLOC REQUIRED IMPORTED_TARGET jemalloc)
# The executables that run on jemalloc link this one target (`dialtree train` then keeps the pages
# it frees: the launcher sets MALLOC_CONF for it, cli/app.h training_malloc_conf; docs/build.md
# P13).
add_library(dialtree_jemalloc INTERFACE)
target_link_libraries(dialtree_jemalloc INTERFACE PkgConfig::JEMALLOC)

# libcsv (RFC 4180 CSV parser): headers and library only, no CMake or pkg-config files.
find_path(CSV_INCLUDE_DIR csv.h REQUIRED)
find_library(CSV_LIBRARY csv REQUIRED)
add_library(dialtree_libcsv INTERFACE)
target_include_directories(dialtree_libcsv SYSTEM INTERFACE ${CSV_INCLUDE_DIR})
target_link_libraries(dialtree_libcsv INTERFACE ${CSV_LIBRARY})

# LibTorch is needed only by the torch-using targets; it reports itself as 1.13.0 (docs/build.md P7).
# The guard build (DIALTREE_TORCH=OFF) has none of them and does not need LibTorch installed.
# DIALTREE_LIBTORCH switches to another LibTorch, e.g. a CUDA one (docs/gpu.md "Building
# against a CUDA LibTorch"): a PyTorch installation's torch.utils.cmake_prefix_path, or the root of
# an unpacked LibTorch archive. Empty: Debian's.
set(DIALTREE_LIBTORCH "" CACHE PATH
    "LibTorch to build against instead of Debian's (torch.utils.cmake_prefix_path, or an unpacked LibTorch archive)")
if(DIALTREE_TORCH)
  if(DIALTREE_LIBTORCH)
    find_package(Torch REQUIRED CONFIG PATHS "${DIALTREE_LIBTORCH}" NO_DEFAULT_PATH)
    # Every other dependency is a Debian 12 package built with the C++11 std::string ABI; a
    # LibTorch built with the old one (PyTorch wheels before 2.7, "pre-cxx11 ABI" archives)
    # cannot share a process with them.
    if(TORCH_CXX_FLAGS MATCHES "_GLIBCXX_USE_CXX11_ABI=0")
      message(FATAL_ERROR
        "The LibTorch in ${DIALTREE_LIBTORCH} uses the pre-C++11 std::string ABI "
        "(TORCH_CXX_FLAGS: ${TORCH_CXX_FLAGS}); dialtree's other libraries use the C++11 one. "
        "Use PyTorch >= 2.7 or a 'cxx11 ABI' LibTorch archive (docs/gpu.md).")
    endif()
    message(STATUS "LibTorch ${Torch_VERSION} from ${DIALTREE_LIBTORCH}")
  else()
    find_package(Torch 1.13 REQUIRED)
  endif()
endif()

# Private SentencePiece build (see scripts/build-sentencepiece.sh).
set(DIALTREE_SPM_PREFIX "${CMAKE_SOURCE_DIR}/.deps/sentencepiece" CACHE PATH
    "Prefix of the SentencePiece build made by scripts/build-sentencepiece.sh")
find_path(SPM_INCLUDE_DIR sentencepiece_processor.h PATHS "${DIALTREE_SPM_PREFIX}/include"
          NO_DEFAULT_PATH)
find_library(SPM_LIBRARY sentencepiece PATHS "${DIALTREE_SPM_PREFIX}/lib" NO_DEFAULT_PATH)
find_library(SPM_TRAIN_LIBRARY sentencepiece_train PATHS "${DIALTREE_SPM_PREFIX}/lib"
             NO_DEFAULT_PATH)
if(NOT SPM_INCLUDE_DIR OR NOT SPM_LIBRARY OR NOT SPM_TRAIN_LIBRARY)
  message(FATAL_ERROR
    "SentencePiece (rebuilt against the system protobuf) was not found in "
    "${DIALTREE_SPM_PREFIX}. Run scripts/setup.sh (or scripts/build-sentencepiece.sh "
    "${DIALTREE_SPM_PREFIX}) first; Debian's libsentencepiece cannot share a process with "
    "LibTorch (docs/build.md P3).")
endif()
find_library(PROTOBUF_LITE_LIBRARY protobuf-lite REQUIRED)
add_library(dialtree_sentencepiece INTERFACE)
target_include_directories(dialtree_sentencepiece SYSTEM INTERFACE ${SPM_INCLUDE_DIR})
target_link_libraries(dialtree_sentencepiece INTERFACE ${SPM_TRAIN_LIBRARY} ${SPM_LIBRARY}
                      ${PROTOBUF_LITE_LIBRARY} Threads::Threads)

find_package(GTest REQUIRED)
include(GoogleTest)
