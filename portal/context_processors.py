def navigation(request):
    return {}
