# Tests of the 1-D partitioner, diffusive refinement, weights and metrics (include/hlb/ccp.h).
set(HLB_CCP_TEST_LIBS hlb_partition_ccp hlb_common PkgConfig::CMOCKA)
hlb_add_test(test_ccp SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_ccp.c LIBS ${HLB_CCP_TEST_LIBS}
             TIMEOUT 60 LABELS partition)
hlb_add_test(test_ccp_diffusive SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_ccp_diffusive.c
             LIBS ${HLB_CCP_TEST_LIBS} TIMEOUT 60 LABELS partition)
hlb_add_test(test_ccp_weights SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_ccp_weights.c
             LIBS ${HLB_CCP_TEST_LIBS} TIMEOUT 60 LABELS partition)
hlb_add_test(test_ccp_metrics SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_ccp_metrics.c
             LIBS ${HLB_CCP_TEST_LIBS} TIMEOUT 60 LABELS partition)
