#include <ini.h>
