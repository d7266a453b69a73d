#include <vulkan/vulkan.h>
