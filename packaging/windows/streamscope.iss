; Inno Setup 6 script: installs the PyInstaller one-folder bundle (dist\streamscope) built
; from packaging\streamscope.spec, per user (default, no admin) or for all users.
;
;   iscc /DAppVersion=0.1.0 packaging\windows\streamscope.iss
;     -> dist\StreamScope-0.1.0-setup.exe
;
; The release workflow (.github/workflows/release.yml) passes AppVersion from
; streamscope.__version__. Start-menu entry, optional desktop icon, uninstaller (Apps &
; features), and the .sscap association ("StreamScope capture" files open in StreamScope).

#ifndef AppVersion
  #define AppVersion "0.0.0"
#endif
#ifndef SourceDir
  #define SourceDir "..\..\dist\streamscope"
#endif
#define AppName "StreamScope"
#define AppExe "streamscope.exe"
#define CaptureProgId "StreamScope.Capture"

[Setup]
AppId={{6E0C7A52-5A2B-4C8E-9D1B-3F3B7C1E5A10}
AppName={#AppName}
AppVersion={#AppVersion}
AppVerName={#AppName} {#AppVersion}
AppPublisher=StreamScope developers
VersionInfoVersion={#AppVersion}
DefaultDirName={autopf}\{#AppName}
DefaultGroupName={#AppName}
DisableProgramGroupPage=yes
; Per-user by default; the first page offers "install for all users" (asks for admin).
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=dialog commandline
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
MinVersion=10.0
OutputDir=..\..\dist
OutputBaseFilename=StreamScope-{#AppVersion}-setup
SetupIconFile=..\..\build\pyinstaller\streamscope\icons\streamscope.ico
UninstallDisplayIcon={app}\{#AppExe}
UninstallDisplayName={#AppName}
LicenseFile=..\..\LICENSE
Compression=lzma2/max
SolidCompression=yes
WizardStyle=modern
ChangesAssociations=yes
CloseApplications=yes

[Languages]
Name: "english"; MessagesFile: "compiler:Default.isl"

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked
Name: "association"; Description: "Open StreamScope capture files (.sscap) with {#AppName}"; GroupDescription: "File types:"

[Files]
Source: "{#SourceDir}\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{autoprograms}\{#AppName}"; Filename: "{app}\{#AppExe}"
Name: "{autodesktop}\{#AppName}"; Filename: "{app}\{#AppExe}"; Tasks: desktopicon

[Registry]
; HKA = HKCU for a per-user install, HKLM for all users.
Root: HKA; Subkey: "Software\Classes\.sscap"; ValueType: string; ValueName: ""; ValueData: "{#CaptureProgId}"; Flags: uninsdeletevalue; Tasks: association
Root: HKA; Subkey: "Software\Classes\.sscap\OpenWithProgids"; ValueType: string; ValueName: "{#CaptureProgId}"; ValueData: ""; Flags: uninsdeletevalue; Tasks: association
Root: HKA; Subkey: "Software\Classes\{#CaptureProgId}"; ValueType: string; ValueName: ""; ValueData: "StreamScope capture"; Flags: uninsdeletekey; Tasks: association
Root: HKA; Subkey: "Software\Classes\{#CaptureProgId}\DefaultIcon"; ValueType: string; ValueName: ""; ValueData: "{app}\{#AppExe},0"; Tasks: association
Root: HKA; Subkey: "Software\Classes\{#CaptureProgId}\shell\open\command"; ValueType: string; ValueName: ""; ValueData: """{app}\{#AppExe}"" ""%1"""; Tasks: association
Root: HKA; Subkey: "Software\Classes\Applications\{#AppExe}\SupportedTypes"; ValueType: string; ValueName: ".sscap"; ValueData: ""; Flags: uninsdeletekey

[Run]
Filename: "{app}\{#AppExe}"; Description: "{cm:LaunchProgram,{#AppName}}"; Flags: nowait postinstall skipifsilent
