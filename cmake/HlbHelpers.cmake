# Helpers shared by every CMakeLists.txt of the project.

# hlb_register_layer(target): add an OBJECT library to libhlb.
function(hlb_register_layer target)
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/src>)
  target_compile_definitions(${target} PRIVATE HLB_BUILDING)
  set_property(GLOBAL APPEND PROPERTY HLB_LAYERS ${target})
endfunction()

# hlb_make_library(): libhlb (shared) and libhlb_static from every registered layer.
function(hlb_make_library)
  get_property(layers GLOBAL PROPERTY HLB_LAYERS)
  set(objects "")
  set(deps "")
  foreach(l ${layers})
    list(APPEND objects $<TARGET_OBJECTS:${l}>)
    get_target_property(ld ${l} HLB_EXTERNAL_LIBS)
    if(ld)
      list(APPEND deps ${ld})
    endif()
  endforeach()
  if(deps)
    list(REMOVE_DUPLICATES deps)
  endif()
  add_library(hlb SHARED ${objects})
  add_library(hlb_static STATIC ${objects})
  set_target_properties(hlb_static PROPERTIES OUTPUT_NAME hlb)
  set_target_properties(hlb PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR})
  foreach(t hlb hlb_static)
    target_include_directories(${t} PUBLIC
      $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
      $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
    target_link_libraries(${t} PUBLIC ${deps})
  endforeach()
  set(HLB_PRIVATE_LIBS "${deps}" PARENT_SCOPE)
endfunction()

# hlb_layer_link(target VISIBILITY libs...): external libraries a layer needs; they are
# recorded so libhlb links them too.
function(hlb_layer_link target)
  target_link_libraries(${target} PUBLIC ${ARGN})
  get_target_property(cur ${target} HLB_EXTERNAL_LIBS)
  if(NOT cur)
    set(cur "")
  endif()
  list(APPEND cur ${ARGN})
  set_target_properties(${target} PROPERTIES HLB_EXTERNAL_LIBS "${cur}")
endfunction()

# hlb_add_test(name SOURCES f.c... LIBS libs... [ARGS a...] [TIMEOUT s] [LABELS l...])
# One executable per test file; exit status 77 means "skipped" (no device).
function(hlb_add_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;ARGS;LABELS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  add_executable(${name} ${T_SOURCES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src
                                             ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(${name} PRIVATE ${T_LIBS})
  if(HLB_SANITIZE)
    # LeakSanitizer's own tracer sometimes crashes at exit with PoCL's threads alive: such a run
    # is repeated once, nothing else (scripts/lsan-tracer-retry.sh says why).
    add_test(NAME ${name} COMMAND ${PROJECT_SOURCE_DIR}/scripts/lsan-tracer-retry.sh
                                  $<TARGET_FILE:${name}> ${T_ARGS})
  else()
    add_test(NAME ${name} COMMAND ${name} ${T_ARGS})
  endif()
  set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT} SKIP_RETURN_CODE 77)
  if(T_LABELS)
    set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}")
  endif()
endfunction()

# hlb_add_all_subdirectories(): add every direct subfolder that has a CMakeLists.txt, in name
# order, so a new test group or benchmark is a new folder and nothing else.
function(hlb_add_all_subdirectories)
  file(GLOB dirs LIST_DIRECTORIES true CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*)
  list(SORT dirs)
  foreach(d ${dirs})
    if(IS_DIRECTORY ${d} AND EXISTS ${d}/CMakeLists.txt)
      add_subdirectory(${d})
    endif()
  endforeach()
endfunction()

# hlb_tests_without_stored_models(): every test of the current directory runs with
# HLB_MODELS=off, so `hlb run` neither reads nor writes the user's model directory and a test
# never starts from what another test (or an earlier run of itself) stored. Call it after the
# directory's last add_test and set_tests_properties(... ENVIRONMENT ...). The models' own
# tests (tests/cli/models) set HLB_MODEL_DIR to a scratch folder instead.
function(hlb_tests_without_stored_models)
  get_property(tests DIRECTORY PROPERTY TESTS)
  if(tests)
    set_property(TEST ${tests} APPEND PROPERTY ENVIRONMENT "HLB_MODELS=off")
  endif()
endfunction()
