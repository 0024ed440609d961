# Cluster files and the two-level assignment. The tests link only the object libraries they
# need, so a broken file elsewhere in libhlb does not stop them.
set(HLB_PLAN_TEST_LIBS hlb_common hlb_model hlb_partition_plan PkgConfig::CMOCKA)
hlb_add_test(test_cluster SOURCES test_cluster.c LIBS ${HLB_PLAN_TEST_LIBS} TIMEOUT 60
             LABELS partition)
target_compile_definitions(test_cluster PRIVATE HLB_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/test_plan.c)
  hlb_add_test(test_plan SOURCES test_plan.c LIBS ${HLB_PLAN_TEST_LIBS} TIMEOUT 300
               LABELS partition)
endif()
