# External dependencies, all from Debian packages (scripts/install-deps.sh installs them).
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(OpenMP COMPONENTS C)
find_library(HLB_LIBM m)

pkg_check_modules(CJSON REQUIRED IMPORTED_TARGET libcjson)
pkg_check_modules(LAPACKE REQUIRED IMPORTED_TARGET lapacke)
pkg_check_modules(HWLOC IMPORTED_TARGET hwloc)
pkg_check_modules(CMOCKA IMPORTED_TARGET cmocka)
pkg_check_modules(OPENCL IMPORTED_TARGET OpenCL)

# GLPK ships no pkg-config file on Debian.
find_path(GLPK_INCLUDE_DIR glpk.h)
find_library(GLPK_LIBRARY glpk)
if(NOT GLPK_INCLUDE_DIR OR NOT GLPK_LIBRARY)
  message(FATAL_ERROR "GLPK not found: apt-get install libglpk-dev")
endif()
add_library(hlb_ext_glpk INTERFACE)
target_include_directories(hlb_ext_glpk INTERFACE ${GLPK_INCLUDE_DIR})
target_link_libraries(hlb_ext_glpk INTERFACE ${GLPK_LIBRARY})
