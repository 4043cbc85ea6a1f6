#include "npu-kdouble.h"
int main(void){ return npu_kdouble_present() ? 0 : 1; }
