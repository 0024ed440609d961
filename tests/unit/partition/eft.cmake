# Tests of the equal-finish-time solvers (include/hlb/partition.h).
set(HLB_EFT_TEST_LIBS hlb_partition_eft hlb_model hlb_common PkgConfig::CMOCKA ${HLB_LIBM})
hlb_add_test(test_eft SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_eft.c LIBS ${HLB_EFT_TEST_LIBS}
             TIMEOUT 60 LABELS partition)
hlb_add_test(test_eft_int SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_eft_int.c
             LIBS ${HLB_EFT_TEST_LIBS} TIMEOUT 120 LABELS partition)
