# make install: library, headers, the hlb command, hlb.pc and a CMake package, so another
# project builds against an installed hlb with pkg-config or find_package(hlb)
# (scripts/check-install.sh proves both).
include(CMakePackageConfigHelpers)

# libhlb may need libraries outside the system paths at run time (cudart): keep their
# directories in the installed library's RUNPATH.
set_target_properties(hlb PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
# The hlb command finds the apps' CUDA kernels (libhlb_apps_cuda) beside libhlb.
if(TARGET hlb_cli)
  set_target_properties(hlb_cli PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}"
                                           INSTALL_RPATH_USE_LINK_PATH TRUE)
endif()
if(TARGET hlb_apps_cuda)
  install(TARGETS hlb_apps_cuda LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()

# hlb_ext_glpk is a plain INTERFACE target of this build; it travels in the export.
install(TARGETS hlb hlb_static hlb_ext_glpk EXPORT hlbTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(HLB_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/hlb)
install(EXPORT hlbTargets NAMESPACE hlb:: DESTINATION ${HLB_CMAKE_DIR})

# The pkg-config modules libhlb links, as PREFIX=module: the config file finds them again for
# the imported targets, and hlb.pc lists them as private requirements.
set(HLB_CONFIG_PKG_DEPS "CJSON=libcjson;LAPACKE=lapacke")
if(HWLOC_FOUND)
  list(APPEND HLB_CONFIG_PKG_DEPS "HWLOC=hwloc")
endif()
if(OPENCL_FOUND)
  list(APPEND HLB_CONFIG_PKG_DEPS "OPENCL=OpenCL")
endif()
set(HLB_CONFIG_NEEDS_CUDA ${HLB_HAVE_CUDA})
# pkg-config: relocatable (prefix from the .pc file's own place), so a staged install works.
list(TRANSFORM HLB_CONFIG_PKG_DEPS REPLACE "^[^=]*=" "" OUTPUT_VARIABLE hlb_pc_modules)
list(JOIN hlb_pc_modules " " HLB_PC_REQUIRES_PRIVATE)
set(HLB_PC_LIBS_PRIVATE "-lglpk -lm -lpthread")
if(HLB_HAVE_CUDA)
  if(NOT HLB_CUDART_DIR)
    message(FATAL_ERROR "the CUDA backend is built but cudart's directory is unknown")
  endif()
  # -Wl,-rpath: the toolkit is outside the loader's paths on most machines.
  string(APPEND HLB_PC_LIBS_PRIVATE " -L${HLB_CUDART_DIR} -Wl,-rpath,${HLB_CUDART_DIR} -lcudart")
endif()
configure_file(${PROJECT_SOURCE_DIR}/hlb.pc.in ${PROJECT_BINARY_DIR}/hlb.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/hlb.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# libhlb_mpi (when MPI was found): hlb_mpi.pc beside hlb.pc, and hlb::hlb_mpi in the CMake
# package. libhlb_mpi.so carries libhlb's objects, so the MPI module only adds MPI and PAPI.
if(TARGET hlb_mpi)
  set(HLB_CONFIG_HAS_MPI ON)
  install(TARGETS hlb_mpi hlb_mpi_static EXPORT hlbMpiTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT hlbMpiTargets NAMESPACE hlb:: DESTINATION ${HLB_CMAKE_DIR})
  set(HLB_MPI_PC_REQUIRES "${HLB_MPI_PKG_MODULE}")
  set(HLB_MPI_PC_LIBS_PRIVATE "${PAPI_LIBRARY}")
  configure_file(${PROJECT_SOURCE_DIR}/hlb_mpi.pc.in ${PROJECT_BINARY_DIR}/hlb_mpi.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/hlb_mpi.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
else()
  set(HLB_CONFIG_HAS_MPI OFF)
endif()

# libhlb_starpu (when StarPU was found): hlb_starpu.pc beside hlb.pc, and hlb::hlb_starpu in
# the CMake package. Like libhlb_mpi it carries libhlb's objects; its module adds starpu-1.3.
if(TARGET hlb_starpu)
  set(HLB_CONFIG_HAS_STARPU ON)
  install(TARGETS hlb_starpu hlb_starpu_static EXPORT hlbStarpuTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT hlbStarpuTargets NAMESPACE hlb:: DESTINATION ${HLB_CMAKE_DIR})
  configure_file(${PROJECT_SOURCE_DIR}/hlb_starpu.pc.in ${PROJECT_BINARY_DIR}/hlb_starpu.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/hlb_starpu.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
else()
  set(HLB_CONFIG_HAS_STARPU OFF)
  # hlb/starpu.h includes starpu.h: a build without StarPU does not install it.
  install(CODE "file(REMOVE \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_INCLUDEDIR}/hlb/starpu.h\")")
endif()

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/hlbConfig.cmake.in
  ${PROJECT_BINARY_DIR}/hlbConfig.cmake INSTALL_DESTINATION ${HLB_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/hlbConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/hlbConfig.cmake ${PROJECT_BINARY_DIR}/hlbConfigVersion.cmake
  DESTINATION ${HLB_CMAKE_DIR})
