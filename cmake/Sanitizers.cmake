# Sanitizer and fuzzing flags for every target (docs/build.md "Guard build").
#   DIALTREE_SANITIZE  comma-separated subset of address, undefined, thread (address and thread
#                      exclude each other). UBSan findings abort (-fno-sanitize-recover), so a
#                      test or fuzz run fails on them instead of printing and going on.
#   DIALTREE_FUZZ      clang's -fsanitize=fuzzer-no-link on every target, so libFuzzer sees the
#                      coverage of the libraries it drives; the fuzz executables add
#                      -fsanitize=fuzzer (tests/fuzz/CMakeLists.txt).
# Included by the top-level CMakeLists.txt before any target is defined.

if(DIALTREE_SANITIZE)
  string(REPLACE "," ";" _dialtree_sanitizers "${DIALTREE_SANITIZE}")
  foreach(_s IN LISTS _dialtree_sanitizers)
    if(NOT _s MATCHES "^(address|undefined|thread)$")
      message(FATAL_ERROR "DIALTREE_SANITIZE: unknown sanitizer '${_s}' in "
                          "'${DIALTREE_SANITIZE}' (known: address, undefined, thread)")
    endif()
  endforeach()
  if("address" IN_LIST _dialtree_sanitizers AND "thread" IN_LIST _dialtree_sanitizers)
    message(FATAL_ERROR "DIALTREE_SANITIZE: address and thread cannot be combined")
  endif()
  list(JOIN _dialtree_sanitizers "," _dialtree_sanitize_flag)
  add_compile_options(-fsanitize=${_dialtree_sanitize_flag} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${_dialtree_sanitize_flag})
  if("undefined" IN_LIST _dialtree_sanitizers)
    add_compile_options(-fno-sanitize-recover=undefined)
    add_link_options(-fno-sanitize-recover=undefined)
  endif()
  message(STATUS "dialtree: sanitizers ${_dialtree_sanitize_flag}")
endif()

if(DIALTREE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "DIALTREE_FUZZ needs clang (libFuzzer), not ${CMAKE_CXX_COMPILER_ID}: "
                        "configure with -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
