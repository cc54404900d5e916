/* cmocka 1.1's assert_float_equal casts both sides to float and fails only
 * when |a - b| > epsilon, which no comparison with NaN is: a NaN result
 * passed. assert_near compares in double, and NaN fails. */
#ifndef PB_TEST_ASSERT_NEAR_H
#define PB_TEST_ASSERT_NEAR_H

#include <math.h>

#define assert_near(a, b, eps) assert_true(fabs((double)(a) - (double)(b)) <= (double)(eps))

#endif
